// A vscode-jsonrpc transport over a WebSocket: one JSON-RPC message per
// text message, as `bridge web` serves at /rpc.

import type { DataCallback, Disposable, Message, MessageConnection } from "vscode-jsonrpc";
import { BridgeClient } from "./client.js";

/** The part of the WebSocket API (browsers, Node 22+) this package uses. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open" | "message" | "error" | "close", listener: (event: any) => void): void;
}

/** A WebSocket constructor (globalThis.WebSocket in browsers and Node 22+). */
export type WebSocketConstructor = new (url: string) => WebSocketLike;

/** Options of connectWebSocket. */
export interface ConnectWebSocketOptions {
  /** The WebSocket implementation; default globalThis.WebSocket. */
  WebSocket?: WebSocketConstructor;
}

/** The vscode-jsonrpc pieces a runtime (node or browser) provides. */
export interface JsonRpcRuntime {
  createMessageConnection(reader: any, writer: any): MessageConnection;
  AbstractMessageReader: abstract new () => any;
  AbstractMessageWriter: abstract new () => any;
}

/** makeConnectWebSocket builds connectWebSocket over one vscode-jsonrpc runtime. */
export function makeConnectWebSocket(rt: JsonRpcRuntime) {
  class Reader extends rt.AbstractMessageReader {
    private callback: DataCallback | undefined;
    private queue: Message[] = [];
    constructor(ws: WebSocketLike) {
      super();
      ws.addEventListener("message", (ev: { data: unknown }) => {
        if (typeof ev.data !== "string") {
          this.fireError(new Error("bridge sent a non-text WebSocket message"));
          return;
        }
        let msg: Message;
        try {
          msg = JSON.parse(ev.data) as Message;
        } catch (err) {
          this.fireError(err);
          return;
        }
        if (this.callback) this.callback(msg);
        else this.queue.push(msg);
      });
      ws.addEventListener("error", () => this.fireError(new Error("WebSocket error")));
      ws.addEventListener("close", () => this.fireClose());
    }
    listen(callback: DataCallback): Disposable {
      this.callback = callback;
      for (const m of this.queue.splice(0)) callback(m);
      return { dispose: () => (this.callback = undefined) };
    }
  }
  class Writer extends rt.AbstractMessageWriter {
    constructor(private readonly ws: WebSocketLike) {
      super();
      ws.addEventListener("close", () => this.fireClose());
    }
    write(msg: Message): Promise<void> {
      try {
        this.ws.send(JSON.stringify(msg));
        return Promise.resolve();
      } catch (err) {
        this.fireError(err, msg, 1);
        return Promise.reject(err);
      }
    }
    end(): void {
      this.ws.close(1000);
    }
  }

  /**
   * connectWebSocket opens url (ws://127.0.0.1:PORT/rpc?token=TOKEN) and
   * resolves to a listening BridgeClient once the socket is open; it rejects
   * when the socket fails first (a wrong token is refused with HTTP 401).
   */
  return function connectWebSocket(url: string, options: ConnectWebSocketOptions = {}): Promise<BridgeClient> {
    const WS = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!WS) {
      return Promise.reject(new Error("connectWebSocket: no WebSocket implementation (pass options.WebSocket)"));
    }
    const ws = new WS(url);
    return new Promise<BridgeClient>((resolve, reject) => {
      let opened = false;
      ws.addEventListener("open", () => {
        opened = true;
        const conn = rt.createMessageConnection(new Reader(ws), new Writer(ws));
        resolve(new BridgeClient(conn, { onDispose: () => ws.close(1000) }));
      });
      const fail = () => {
        if (!opened) reject(new Error(`connectWebSocket: could not open ${url.replace(/token=[^&]*/, "token=…")}`));
      };
      ws.addEventListener("error", fail);
      ws.addEventListener("close", fail);
    });
  };
}
