// @bridge-dev/client for Node: the contract's types, BridgeClient,
// spawnBridge (stdio) and connectWebSocket (bridge web's /rpc).

import { spawn } from "node:child_process";
import {
  AbstractMessageReader,
  AbstractMessageWriter,
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node.js";
import { BridgeClient } from "./client.js";
import { makeConnectWebSocket } from "./websocket.js";

export type * from "./contract.js";
export * from "./client.js";
export { budgetFreeHeadings, handoffHeadings, handoffParts, parseHandoff, partOf, splitSections, summaryChars } from "./handoff.js";
export type { HandoffPart, ParsedHandoff } from "./handoff.js";
export type { ConnectWebSocketOptions, WebSocketConstructor, WebSocketLike } from "./websocket.js";

/** Options of spawnBridge. */
export interface SpawnBridgeOptions {
  /** The bridge program; default "bridge" (on PATH), or $BRIDGE_BIN when set. */
  command?: string;
  /** Arguments after the global ones; default ["serve"]. */
  args?: string[];
  /** The data directory (--data-dir). */
  dataDir?: string;
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Working directory of the process. */
  cwd?: string;
  /** Receives the process's stderr, line by line; default: discarded. */
  onStderr?: (line: string) => void;
}

/** The bridge process behind a spawned client. */
export interface BridgeProcess {
  readonly pid: number | undefined;
  kill(signal?: "SIGTERM" | "SIGKILL" | "SIGINT"): boolean;
  /** Resolves with the exit code once the process ended. */
  readonly exited: Promise<number | null>;
}

/** A BridgeClient whose connection is a bridge process's stdio. */
export interface SpawnedBridge extends BridgeClient {
  readonly process: BridgeProcess;
}

/**
 * spawnBridge starts `bridge serve` and returns a listening client on its
 * stdin and stdout. Call initialize next; shutdown (or dispose) ends it.
 */
export function spawnBridge(options: SpawnBridgeOptions = {}): SpawnedBridge {
  const command = options.command ?? process.env.BRIDGE_BIN ?? "bridge";
  const args = [...(options.dataDir ? ["--data-dir", options.dataDir] : []), ...(options.args ?? ["serve"])];
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let pending = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    if (!options.onStderr) return;
    pending += chunk;
    let i: number;
    while ((i = pending.indexOf("\n")) >= 0) {
      options.onStderr(pending.slice(0, i));
      pending = pending.slice(i + 1);
    }
  });
  const exited = new Promise<number | null>((resolve) => {
    child.on("exit", (code) => resolve(code));
    child.on("error", () => resolve(null));
  });
  const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  const client = new BridgeClient(conn, {
    onDispose: () => {
      child.stdin.end();
      const t = setTimeout(() => child.kill("SIGTERM"), 5000);
      t.unref();
      void exited.then(() => clearTimeout(t));
    },
  }) as BridgeClient & { process: BridgeProcess };
  Object.defineProperty(client, "process", {
    value: { pid: child.pid, kill: (s?: NodeJS.Signals) => child.kill(s), exited },
  });
  return client;
}

/**
 * connectWebSocket opens bridge web's /rpc (ws://127.0.0.1:PORT/rpc?token=TOKEN)
 * and resolves to a listening client. Node 22+ has a WebSocket; on Node 20
 * run with --experimental-websocket or pass options.WebSocket.
 */
export const connectWebSocket = makeConnectWebSocket({
  createMessageConnection,
  AbstractMessageReader,
  AbstractMessageWriter,
});
