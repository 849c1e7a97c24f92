// BridgeClient: typed JSON-RPC calls to Bridge over any vscode-jsonrpc
// connection (stdio from Node, a WebSocket from a browser).

import type { CancellationToken, Disposable, MessageConnection } from "vscode-jsonrpc";
import type { BridgeMethods, BridgeNotifications, InitializeParams, InitializeResult } from "./contract.js";

/** A request the client sends (clientToServer or both). */
export type ClientRequest = {
  [M in keyof BridgeMethods]: BridgeMethods[M]["direction"] extends "serverToClient" ? never : M;
}[keyof BridgeMethods];

/** A request Bridge sends to a session-hosting client (serverToClient or both). */
export type ServerRequest = {
  [M in keyof BridgeMethods]: BridgeMethods[M]["direction"] extends "clientToServer" ? never : M;
}[keyof BridgeMethods];

/** The params type of request M. */
export type ParamsOf<M extends keyof BridgeMethods> = BridgeMethods[M]["params"];
/** The result type of request M. */
export type ResultOf<M extends keyof BridgeMethods> = BridgeMethods[M]["result"];
/** The params type of notification N. */
export type NotificationParamsOf<N extends keyof BridgeNotifications> = BridgeNotifications[N]["params"];

/** Options of initialize: anything of InitializeParams; processId and clientInfo have defaults. */
export type InitializeOptions = Partial<InitializeParams>;

/** The data of a Bridge error reply: data.code is the domain error class ("not_found", …). */
export interface BridgeErrorData {
  code?: string;
  [key: string]: unknown;
}

/**
 * errorCode returns the domain error class (data.code: "not_found", "invalid",
 * …) of a rejected request, or undefined.
 */
export function errorCode(err: unknown): string | undefined {
  const data = (err as { data?: BridgeErrorData } | null)?.data;
  return typeof data?.code === "string" ? data.code : undefined;
}

/** ClosedError rejects a request whose connection closed before Bridge answered it. */
export class ClosedError extends Error {
  /** The request's method. */
  readonly method: string;
  constructor(method: string) {
    super(`bridge: the connection closed before Bridge answered ${method}`);
    this.name = "ClosedError";
    this.method = method;
  }
}

/** BridgeClient makes typed calls over a vscode-jsonrpc MessageConnection. */
export class BridgeClient {
  /** The underlying connection. */
  readonly connection: MessageConnection;
  private readonly onDispose: (() => void) | undefined;
  private disposed = false;
  private closed = false;
  /** The requests sent and not answered yet: each one's reject and method. */
  private readonly pending = new Map<(err: Error) => void, string>();

  /**
   * Wraps connection and starts listening on it (unless it is listening
   * already: pass listen false). onDispose runs once when dispose is called.
   */
  constructor(connection: MessageConnection, options: { listen?: boolean; onDispose?: () => void } = {}) {
    this.connection = connection;
    this.onDispose = options.onDispose;
    // vscode-jsonrpc settles the requests in flight only on dispose: when
    // the connection closes (Bridge exited, or bridge web closed a tab that
    // fell behind) they would never settle. They fail now.
    connection.onClose(() => {
      this.closed = true;
      for (const [reject, method] of this.pending) reject(new ClosedError(method));
      this.pending.clear();
    });
    if (options.listen !== false) connection.listen();
  }

  /**
   * Sends request method with params; a token's cancellation sends
   * $/cancelRequest. It rejects (with ClosedError) when the connection is
   * closed before Bridge answers.
   */
  request<M extends ClientRequest>(method: M, params: ParamsOf<M>, token?: CancellationToken): Promise<ResultOf<M>> {
    if (this.closed) return Promise.reject(new ClosedError(method));
    const args: unknown[] = [];
    if (params !== undefined) args.push(params);
    if (token !== undefined) args.push(token);
    let reject!: (err: Error) => void;
    const closed = new Promise<never>((_, r) => (reject = r));
    this.pending.set(reject, method);
    let sent: Promise<ResultOf<M>>;
    try {
      sent = this.connection.sendRequest(method, ...args) as Promise<ResultOf<M>>;
    } catch (err) {
      sent = Promise.reject(err);
    }
    return Promise.race([sent, closed]).finally(() => this.pending.delete(reject));
  }

  /** Calls handler for every notification named method. */
  onNotification<N extends keyof BridgeNotifications>(
    method: N,
    handler: (params: NotificationParamsOf<N>) => void,
  ): Disposable {
    return this.connection.onNotification(method, (params: unknown) => handler(params as NotificationParamsOf<N>));
  }

  /** Answers Bridge's requests named method (host/* for a session-hosting client). */
  onRequest<M extends ServerRequest>(
    method: M,
    handler: (params: ParamsOf<M>, token: CancellationToken) => ResultOf<M> | Promise<ResultOf<M>>,
  ): Disposable {
    return this.connection.onRequest(method, (params: unknown, token: CancellationToken) =>
      handler(params as ParamsOf<M>, token),
    );
  }

  /** Sends a client notification (such as $/cancelRequest or host/event). */
  notify(method: string, params?: object): Promise<void> {
    return params === undefined ? this.connection.sendNotification(method) : this.connection.sendNotification(method, params);
  }

  /** The LSP handshake: initialize, then the initialized notification. */
  async initialize(options: InitializeOptions = {}): Promise<InitializeResult> {
    const params = {
      processId: null,
      clientInfo: { name: "@bridge-dev/client" },
      capabilities: {},
      ...options,
    } as InitializeParams;
    const result = await this.request("initialize", params);
    await this.notify("initialized", {});
    return result;
  }

  /** shutdown, then exit; then the connection is disposed. */
  async shutdown(): Promise<void> {
    await this.request("shutdown", undefined);
    await this.notify("exit");
    this.dispose();
  }

  /** Closes the connection (and, for spawnBridge, ends the process). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.connection.dispose();
    this.onDispose?.();
  }
}
