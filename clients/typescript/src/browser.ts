// @bridge-dev/client for browsers: the contract's types, BridgeClient and
// connectWebSocket (bridge web's /rpc). spawnBridge is Node's only.

import { AbstractMessageReader, AbstractMessageWriter, createMessageConnection } from "vscode-jsonrpc/browser.js";
import { makeConnectWebSocket } from "./websocket.js";

export type * from "./contract.js";
export * from "./client.js";
export { budgetFreeHeadings, handoffHeadings, handoffParts, parseHandoff, partOf, splitSections, summaryChars } from "./handoff.js";
export type { HandoffPart, ParsedHandoff } from "./handoff.js";
export type { ConnectWebSocketOptions, WebSocketConstructor, WebSocketLike } from "./websocket.js";

/** connectWebSocket opens bridge web's /rpc and resolves to a listening client. */
export const connectWebSocket = makeConnectWebSocket({
  createMessageConnection,
  AbstractMessageReader,
  AbstractMessageWriter,
});
