/**
 * The console's WebSocket client: the same protocol and auth as every other client (SPEC 14). It answers the
 * challenge with `connect` (signed with the device key where the browser has one), matches responses to requests,
 * hands events to listeners, and reconnects by itself with a growing delay when the socket drops. A refused token
 * stops it: trying the same token again cannot help.
 */
import type { ResponseFrame, EventFrame as WireEventFrame } from "../../src/protocol/frames";
import type { ConnectParams } from "../../src/protocol/params";
import type { HelloOk } from "../../src/protocol/payloads";
import { deviceAuthPayloadFor, deviceIdentity } from "./device";

export const CLIENT_ID = "loopgate-console";
const CLIENT_VERSION = "1";
const PROTOCOL = 4;
const SCOPES = ["operator.admin", "operator.read", "operator.write", "operator.approvals"];
/** reconnect delays grow to this (ms) */
const MAX_BACKOFF_MS = 5000;
const FIRST_BACKOFF_MS = 250;

export type ConnState =
  | { kind: "connecting"; attempt: number }
  | { kind: "open"; scopes: string[]; server: string }
  | { kind: "unreachable"; attempt: number; retryInMs: number }
  | { kind: "refused"; message: string };

/** An event as the console reads it (the wire's EventFrame with an object payload). */
export type EventFrame = WireEventFrame<Record<string, unknown>>;

export class RpcError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

type Pending = { resolve(v: unknown): void; reject(e: Error): void };

export class GatewayClient {
  private ws: WebSocket | undefined;
  private readonly pending = new Map<string, Pending>();
  private nextId = 1;
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  private readonly eventListeners = new Set<(e: EventFrame) => void>();
  private readonly stateListeners = new Set<(s: ConnState) => void>();
  private readonly openListeners = new Set<(reconnect: boolean) => void>();
  private everOpened = false;
  /** what this gateway serves (hello-ok.features.methods): pages for missing methods are left out */
  methods: string[] = [];
  state: ConnState = { kind: "connecting", attempt: 0 };

  constructor(
    private readonly url: string,
    private readonly token: string,
  ) {}

  start(): void {
    this.stopped = false;
    this.open();
  }

  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.ws?.close(1000, "console closed");
  }

  onEvent(fn: (e: EventFrame) => void): () => void {
    this.eventListeners.add(fn);
    return () => this.eventListeners.delete(fn);
  }

  onState(fn: (s: ConnState) => void): () => void {
    this.stateListeners.add(fn);
    return () => this.stateListeners.delete(fn);
  }

  /** Called after every successful connect; `reconnect` is true from the second on (time to re-read and replay). */
  onOpen(fn: (reconnect: boolean) => void): () => void {
    this.openListeners.add(fn);
    return () => this.openListeners.delete(fn);
  }

  get scopes(): string[] {
    return this.state.kind === "open" ? this.state.scopes : [];
  }

  call<T = unknown>(method: string, params?: unknown): Promise<T> {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN || this.state.kind !== "open") {
      return Promise.reject(new RpcError("unavailable", "not connected to the gateway"));
    }
    const id = `c${this.nextId++}`;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      ws.send(JSON.stringify({ type: "req", id, method, ...(params === undefined ? {} : { params }) }));
    });
  }

  private setState(s: ConnState): void {
    this.state = s;
    for (const fn of this.stateListeners) fn(s);
  }

  private open(): void {
    this.setState({ kind: "connecting", attempt: this.attempt });
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.url);
    } catch (err) {
      this.setState({ kind: "refused", message: `cannot open ${this.url}: ${(err as Error).message}` });
      return;
    }
    this.ws = ws;
    let refused: string | undefined;
    let helloId: string | undefined;
    ws.onmessage = (msg) => {
      let frame: EventFrame | ResponseFrame;
      try {
        frame = JSON.parse(String(msg.data));
      } catch {
        return;
      }
      if (frame.type === "event") {
        if (frame.event === "connect.challenge" && !helloId) {
          helloId = `c${this.nextId++}`;
          void this.sendConnect(ws, helloId, String(frame.payload?.nonce ?? ""));
          return;
        }
        for (const fn of this.eventListeners) fn(frame);
        return;
      }
      if (frame.type !== "res") return;
      if (frame.id === helloId) {
        if (!frame.ok) {
          refused = frame.error?.message ?? "connect refused";
          return;
        }
        const hello = frame.payload as HelloOk;
        this.methods = hello.features.methods;
        const reconnect = this.everOpened;
        this.everOpened = true;
        this.attempt = 0;
        this.setState({ kind: "open", scopes: hello.auth.scopes, server: hello.server.version });
        for (const fn of this.openListeners) fn(reconnect);
        return;
      }
      const p = this.pending.get(frame.id);
      if (!p) return;
      this.pending.delete(frame.id);
      if (frame.ok) p.resolve(frame.payload);
      else p.reject(new RpcError(frame.error?.code ?? "error", frame.error?.message ?? "request failed"));
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      for (const p of this.pending.values()) p.reject(new RpcError("unavailable", "connection lost"));
      this.pending.clear();
      if (refused !== undefined) {
        this.setState({ kind: "refused", message: refused });
        return;
      }
      if (this.stopped) return;
      this.attempt++;
      const retryInMs = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (this.attempt - 1));
      this.setState({ kind: "unreachable", attempt: this.attempt, retryInMs });
      this.retryTimer = setTimeout(() => this.open(), retryInMs);
    };
  }

  private async sendConnect(ws: WebSocket, id: string, nonce: string): Promise<void> {
    const client = {
      id: CLIENT_ID,
      version: CLIENT_VERSION,
      platform: "web",
      mode: "ui",
      deviceFamily: "browser",
    };
    const role = "operator";
    const device = await deviceIdentity();
    let deviceBlock: ConnectParams["device"];
    if (device) {
      const signedAt = Date.now();
      const payload = deviceAuthPayloadFor({
        deviceId: device.id,
        clientId: client.id,
        clientMode: client.mode,
        role,
        scopes: SCOPES,
        signedAt,
        token: this.token,
        nonce,
        platform: client.platform,
        deviceFamily: client.deviceFamily,
      });
      deviceBlock = {
        id: device.id,
        publicKey: device.publicKey,
        signature: await device.sign(payload),
        signedAt,
        nonce,
      };
    }
    if (ws.readyState !== WebSocket.OPEN) return;
    const params: ConnectParams = {
      minProtocol: PROTOCOL,
      maxProtocol: PROTOCOL,
      client,
      role,
      scopes: SCOPES,
      ...(this.token ? { auth: { token: this.token } } : {}),
      ...(deviceBlock ? { device: deviceBlock } : {}),
    };
    ws.send(JSON.stringify({ type: "req", id, method: "connect", params }));
  }
}

/** ws://host:port of the gateway that served this page. */
export function gatewayUrl(): string {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  return `${proto}//${location.host}`;
}

export function canWrite(scopes: readonly string[]): boolean {
  return scopes.includes("operator.admin") || scopes.includes("operator.write");
}

export function canApprove(scopes: readonly string[]): boolean {
  return scopes.includes("operator.admin") || scopes.includes("operator.approvals");
}

/** A random key; getRandomValues works outside secure contexts too (a gateway reached over plain http on a LAN). */
export function newIdempotencyKey(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return `console-${[...b].map((x) => x.toString(16).padStart(2, "0")).join("")}`;
}
