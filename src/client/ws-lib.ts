import { createRequire } from "node:module";
import type * as Ws from "ws";

/**
 * `ws` loaded through require: on Node 20, importing this CommonJS package from ESM sends each of its files through
 * the ESM translator, which costs about 100 ms of cold start (measured) — a third of the gateway's own startup.
 * Gateway and client both take it from here.
 */
const ws = createRequire(import.meta.url)("ws") as typeof Ws;

export const WebSocket = ws.WebSocket;
export type WebSocket = Ws.WebSocket;
export const WebSocketServer = ws.WebSocketServer;
export type WebSocketServer = Ws.WebSocketServer;
export type RawData = Ws.RawData;
export type ClientOptions = Ws.ClientOptions;
