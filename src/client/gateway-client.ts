import { type DeviceIdentity, deviceAuthPayloadFor } from "../protocol/device.js";
import {
  type ErrorShape,
  type EventFrame,
  PROTOCOL_VERSION,
  type RequestFrame,
  type ResponseFrame,
} from "../protocol/frames.js";
import type {
  AgentAccepted,
  AgentEventPayload,
  ChatEventPayload,
  ConnectChallenge,
  HelloOk,
} from "../protocol/payloads.js";
import type { AgentFinal, WaitResult } from "../protocol/run.js";
import { loopgateVersion } from "../protocol/version.js";
import { CONNECTION_CLOSED, GatewayConnectError, GatewayRequestError } from "./errors.js";
import { type RawData, WebSocket } from "./ws-lib.js";

export interface ClientInfo {
  id: string;
  version: string;
  platform: string;
  mode: string;
  deviceFamily?: string;
  displayName?: string;
}

export interface GatewayClientOptions {
  /** ws://host:port */
  url: string;
  token?: string;
  /** signs the challenge nonce (SPEC 14 device identity) */
  device?: DeviceIdentity;
  /** default `{ id: "gateway-client", mode: "backend" }` with this process's platform and loopgate's version */
  client?: Partial<ClientInfo>;
  role?: string;
  /** omitted: the gateway grants all operator scopes */
  scopes?: string[];
  /** for the whole handshake (TCP connect, challenge, hello-ok); default 5000 */
  connectTimeoutMs?: number;
  minProtocol?: number;
  maxProtocol?: number;
}

/** `agent` params (SPEC 14); extra OpenClaw fields pass through untouched. */
export interface AgentCallParams {
  message: string;
  idempotencyKey: string;
  agentId?: string;
  sessionKey?: string;
  sessionId?: string;
  model?: string;
  provider?: string;
  thinking?: string;
  timeout?: number;
  lane?: string;
  promptMode?: "full" | "minimal" | "none";
  extraSystemPrompt?: string;
  queueMode?: string;
  label?: string;
  deliver?: boolean;
  [extra: string]: unknown;
}

export interface AgentCallHandlers {
  /** the first response: the run is durable and its events are on their way */
  onAccepted?: (accepted: AgentAccepted) => void;
  /** every `agent` event of this run, in seq order */
  onEvent?: (event: AgentEventPayload) => void;
  /** every `chat` event of this run */
  onChat?: (event: ChatEventPayload) => void;
}

type EventListener = (payload: unknown, frame: EventFrame) => void;

interface Pending {
  method: string;
  /** true when the request is answered completely (`agent` waits for its second frame) */
  onResponse(frame: ResponseFrame): boolean;
  fail(err: Error): void;
}

interface RunWatch {
  onEvent?: (event: AgentEventPayload) => void;
  onChat?: (event: ChatEventPayload) => void;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 5000;
/** A gateway silent for this many tick intervals is considered gone. */
const MISSED_TICKS_BEFORE_CLOSE = 2.5;

/**
 * A client of the Loopgate gateway (and of any gateway speaking the same OpenClaw v4 subset): handshake,
 * requests, the two-frame `agent` call, and event subscription. Used by the CLI and by tests.
 */
export class GatewayClient {
  readonly hello: HelloOk;
  readonly url: string;
  private readonly ws: WebSocket;
  private readonly pending = new Map<string, Pending>();
  private readonly listeners = new Map<string, Set<EventListener>>();
  private readonly runs = new Map<string, RunWatch>();
  private readonly closeListeners = new Set<(info: { code: number; reason: string }) => void>();
  private nextId = 1;
  private closed = false;
  private watchdog: NodeJS.Timeout | undefined;
  private readonly silenceLimitMs: number;

  private constructor(ws: WebSocket, url: string, hello: HelloOk) {
    this.ws = ws;
    this.url = url;
    this.hello = hello;
    // a gateway that announces no tick interval is given OpenClaw's default (30 s)
    this.silenceLimitMs = Math.ceil((hello.policy?.tickIntervalMs ?? 30_000) * MISSED_TICKS_BEFORE_CLOSE);
    ws.on("message", (data) => this.onFrame(String(data)));
    ws.on("close", (code, reason) => this.onClosed(code, reason.toString()));
    ws.on("error", () => {
      // "close" follows and rejects whatever is pending
    });
    this.armWatchdog();
  }

  /** Opens the socket and completes the handshake; rejects with GatewayConnectError or GatewayRequestError. */
  static connect(opts: GatewayClientOptions): Promise<GatewayClient> {
    const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    const client: ClientInfo = {
      id: opts.client?.id ?? "gateway-client",
      version: opts.client?.version ?? loopgateVersion(),
      platform: opts.client?.platform ?? process.platform,
      mode: opts.client?.mode ?? "backend",
      ...(opts.client?.deviceFamily !== undefined ? { deviceFamily: opts.client.deviceFamily } : {}),
      ...(opts.client?.displayName !== undefined ? { displayName: opts.client.displayName } : {}),
    };
    return new Promise((resolve, reject) => {
      let settled = false;
      const ws = new WebSocket(opts.url, { handshakeTimeout: timeoutMs });
      const finish = (err: Error | undefined, value?: GatewayClient) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        ws.off("message", onMessage);
        ws.off("close", onClose);
        ws.off("error", onError);
        if (err) {
          ws.on("error", () => {});
          ws.terminate();
          reject(err);
        } else resolve(value as GatewayClient);
      };
      const timer = setTimeout(
        () =>
          finish(
            new GatewayConnectError(
              "timeout",
              opts.url,
              `no gateway handshake from ${opts.url} within ${timeoutMs} ms`,
            ),
          ),
        timeoutMs,
      );
      const onError = (err: NodeJS.ErrnoException) => {
        const unreachable = ["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"].includes(
          err.code ?? "",
        );
        finish(
          new GatewayConnectError(
            unreachable ? "unreachable" : "closed",
            opts.url,
            unreachable
              ? `no gateway reachable at ${opts.url} (${err.code})`
              : `cannot connect to ${opts.url}: ${err.message}`,
            { cause: err },
          ),
        );
      };
      const onClose = (code: number, reason: Buffer) =>
        finish(
          new GatewayConnectError(
            "closed",
            opts.url,
            `the gateway closed the connection during the handshake (${code}${reason.length ? ` ${reason}` : ""})`,
          ),
        );
      const connectId = "connect";
      const onMessage = (data: RawData) => {
        let frame: EventFrame | ResponseFrame;
        try {
          frame = JSON.parse(String(data)) as EventFrame | ResponseFrame;
        } catch {
          finish(new GatewayConnectError("closed", opts.url, "the gateway sent malformed JSON during the handshake"));
          return;
        }
        if (frame.type === "event" && frame.event === "connect.challenge") {
          const challenge = frame.payload as ConnectChallenge;
          const request: RequestFrame = {
            type: "req",
            id: connectId,
            method: "connect",
            params: connectParams(opts, client, challenge.nonce),
          };
          ws.send(JSON.stringify(request));
          return;
        }
        if (frame.type === "res" && frame.id === connectId) {
          if (!frame.ok) {
            finish(new GatewayRequestError("connect", frame.error ?? { code: "unknown", message: "connect refused" }));
            return;
          }
          finish(undefined, new GatewayClient(ws, opts.url, frame.payload as HelloOk));
        }
      };
      // An HTTP refusal of the upgrade (421 for a Host the gateway does not serve, 503 while it stops) carries a
      // JSON body saying why; without this the user would read only "Unexpected server response: 421".
      ws.on("unexpected-response", (_req, res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          if (size < 4096) chunks.push(c);
          size += c.length;
        });
        res.on("error", () => {});
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8").slice(0, 4096);
          let why = "";
          try {
            const body = JSON.parse(text) as { error?: unknown };
            if (typeof body.error === "string") why = `: ${body.error}`;
          } catch {}
          finish(
            new GatewayConnectError(
              "closed",
              opts.url,
              `the gateway at ${opts.url} refused the connection (HTTP ${res.statusCode})${why}`,
            ),
          );
        });
      });
      ws.on("message", onMessage);
      ws.on("close", onClose);
      ws.on("error", onError);
    });
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  /** Sends a request and resolves with its payload; an error response rejects with GatewayRequestError. */
  request<T = unknown>(method: string, params?: unknown, opts: { timeoutMs?: number } = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const id = this.send(method, params, {
        method,
        onResponse: (frame) => {
          if (timer) clearTimeout(timer);
          if (frame.ok) resolve(frame.payload as T);
          else reject(new GatewayRequestError(method, frame.error ?? { code: "unknown", message: "request failed" }));
          return true;
        },
        fail: (err) => {
          if (timer) clearTimeout(timer);
          reject(err);
        },
      });
      if (id !== undefined && opts.timeoutMs !== undefined) {
        timer = setTimeout(() => {
          this.pending.delete(id);
          reject(
            new GatewayRequestError(method, {
              code: "timeout",
              message: `${method}: no answer within ${opts.timeoutMs} ms`,
            }),
          );
        }, opts.timeoutMs);
      }
    });
  }

  /**
   * `agent`: follows both response frames. `onAccepted` sees the first; the promise resolves with the final.
   * Events of the run go to `onEvent` / `onChat` until then.
   */
  agent(params: AgentCallParams, handlers: AgentCallHandlers = {}): Promise<AgentFinal> {
    const runId = params.idempotencyKey;
    this.runs.set(runId, { onEvent: handlers.onEvent, onChat: handlers.onChat });
    return new Promise<AgentFinal>((resolve, reject) => {
      this.send("agent", params, {
        method: "agent",
        onResponse: (frame) => {
          if (!frame.ok) {
            this.runs.delete(runId);
            reject(new GatewayRequestError("agent", frame.error ?? { code: "unknown", message: "agent failed" }));
            return true;
          }
          const payload = frame.payload as AgentAccepted | AgentFinal;
          if (payload.status === "accepted") {
            handlers.onAccepted?.(payload as AgentAccepted);
            return false;
          }
          this.runs.delete(runId);
          resolve(payload as AgentFinal);
          return true;
        },
        fail: (err) => {
          this.runs.delete(runId);
          reject(err);
        },
      });
    });
  }

  agentWait(runId: string, timeoutMs?: number): Promise<WaitResult> {
    return this.request<WaitResult>("agent.wait", timeoutMs === undefined ? { runId } : { runId, timeoutMs });
  }

  /** Listens to one event (`agent`, `chat`, `tick`, `shutdown`, ...) or to all with `"*"`. Returns the unsubscribe. */
  on(event: string, listener: EventListener): () => void {
    let set = this.listeners.get(event);
    if (!set) {
      set = new Set();
      this.listeners.set(event, set);
    }
    set.add(listener);
    const listeners = set;
    return () => listeners.delete(listener);
  }

  onClose(listener: (info: { code: number; reason: string }) => void): () => void {
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  /** Closes the connection; pending requests are rejected. */
  close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      const cut = setTimeout(() => this.ws.terminate(), 1000);
      this.ws.once("close", () => {
        clearTimeout(cut);
        resolve();
      });
      this.ws.close(1000, "client closing");
    });
  }

  private send(method: string, params: unknown, pending: Pending): string | undefined {
    if (this.closed || this.ws.readyState !== WebSocket.OPEN) {
      pending.fail(
        new GatewayRequestError(method, {
          code: CONNECTION_CLOSED,
          message: "the gateway connection is closed",
          retryable: true,
        }),
      );
      return undefined;
    }
    const id = String(this.nextId++);
    this.pending.set(id, pending);
    const frame: RequestFrame =
      params === undefined ? { type: "req", id, method } : { type: "req", id, method, params };
    this.ws.send(JSON.stringify(frame));
    return id;
  }

  private onFrame(text: string): void {
    this.armWatchdog();
    let frame: EventFrame | ResponseFrame;
    try {
      frame = JSON.parse(text) as EventFrame | ResponseFrame;
    } catch {
      return;
    }
    if (frame.type === "res") {
      const p = this.pending.get(frame.id);
      if (p?.onResponse(frame)) this.pending.delete(frame.id);
      return;
    }
    if (frame.type !== "event") return;
    if (frame.event === "agent" || frame.event === "chat") {
      const payload = frame.payload as { runId?: string };
      const watch = payload?.runId !== undefined ? this.runs.get(payload.runId) : undefined;
      if (watch) {
        if (frame.event === "agent") watch.onEvent?.(frame.payload as AgentEventPayload);
        else watch.onChat?.(frame.payload as ChatEventPayload);
      }
    }
    for (const l of this.listeners.get(frame.event) ?? []) l(frame.payload, frame);
    for (const l of this.listeners.get("*") ?? []) l(frame.payload, frame);
  }

  /** Ticks arrive every tickIntervalMs: a gateway silent for much longer is gone even if TCP has not noticed. */
  private armWatchdog(): void {
    if (this.closed) return;
    if (this.watchdog) this.watchdog.refresh();
    else {
      this.watchdog = setTimeout(() => this.ws.terminate(), this.silenceLimitMs);
      this.watchdog.unref();
    }
  }

  private onClosed(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    if (this.watchdog) clearTimeout(this.watchdog);
    const error: ErrorShape = {
      code: CONNECTION_CLOSED,
      message: `the gateway connection closed (${code}${reason ? ` ${reason}` : ""})`,
      retryable: true,
    };
    const pending = [...this.pending.values()];
    this.pending.clear();
    this.runs.clear();
    for (const p of pending) p.fail(new GatewayRequestError(p.method, error));
    for (const l of this.closeListeners) l({ code, reason });
  }
}

function connectParams(opts: GatewayClientOptions, client: ClientInfo, nonce: string): Record<string, unknown> {
  const role = opts.role ?? "operator";
  const params: Record<string, unknown> = {
    minProtocol: opts.minProtocol ?? PROTOCOL_VERSION,
    maxProtocol: opts.maxProtocol ?? PROTOCOL_VERSION,
    client,
    role,
  };
  if (opts.scopes) params.scopes = opts.scopes;
  if (opts.token !== undefined) params.auth = { token: opts.token };
  if (opts.device) {
    const signedAt = Date.now();
    const signature = opts.device.sign(
      deviceAuthPayloadFor({
        deviceId: opts.device.id,
        clientId: client.id,
        clientMode: client.mode,
        role,
        scopes: opts.scopes ?? [],
        signedAt,
        token: opts.token ?? "",
        nonce,
        platform: client.platform,
        deviceFamily: client.deviceFamily ?? "",
      }),
    );
    params.device = { id: opts.device.id, publicKey: opts.device.publicKey, signature, signedAt, nonce };
  }
  return params;
}
