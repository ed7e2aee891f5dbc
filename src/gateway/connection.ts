import { randomUUID } from "node:crypto";
import { type RawData, WebSocket } from "../client/ws-lib.js";
import {
  ErrorCodes,
  type ErrorShape,
  GATEWAY_EVENTS,
  PROTOCOL_VERSION,
  type RequestFrame,
  UNKNOWN_REQUEST_ID,
} from "../protocol/frames.js";
import { ATTACHMENT_LIMITS, findLimitProblem } from "../protocol/limits.js";
import { OPENCLAW_METHODS } from "../protocol/openclaw-methods.js";
import { connectParamsSchema, parseParams, parseWith, requestFrameSchema } from "../protocol/params.js";
import type { ConnectChallenge, HelloOk } from "../protocol/payloads.js";
import { ClientAccess } from "./access.js";
import { authenticate, grantScopes, hasScope, requiredScope } from "./auth.js";
import { BackpressureMonitor, type SendVerdict } from "./backpressure.js";
import { type EventSink, eventPrefix } from "./broadcast.js";
import type { CallerConnection, GatewayContext, Reply } from "./context.js";
import { errorFrameWithin, errorReplyBudget } from "./error-budget.js";
import { toErrorShape } from "./errors.js";
import { setMessageLimit } from "./message-limit.js";

/** WebSocket close codes we use. */
const CLOSE = { policy: 1008, tooBig: 1009, goingAway: 1001, tryAgainLater: 1013 } as const;
/** What a `terminate` (no close frame) reports as its code. */
const CLOSE_ABNORMAL = 1006;

const CHALLENGE_PREFIX = eventPrefix("connect.challenge");

type State = "handshake" | "ready" | "closed";

/**
 * One client connection: the handshake state machine (challenge → connect → hello-ok), request dispatch, and the
 * bounded send path. Before `connect` succeeds every problem closes the socket; afterwards a bad frame gets an
 * error response and the connection keeps working.
 */
export class GatewayConnection implements EventSink, CallerConnection {
  readonly connId = randomUUID();
  private state: State = "handshake";
  private readonly nonce = randomUUID();
  private seq = 0;
  /** the socket is corked until the end of this tick (see `coalesce`) */
  private corked = false;
  private handshakeTimer: NodeJS.Timeout | undefined;
  /** checks the slow-consumer rule when the grace of an overrun ends (armSlowReaderCheck) */
  private slowReaderTimer: NodeJS.Timeout | undefined;
  /** frees this connection's place under the connection caps (connection-caps.ts); set by `connect` */
  private releaseSlot: (() => void) | undefined;
  /** nothing until `connect` succeeds */
  access = new ClientAccess([], { scopes: [], sessions: [], sessionAllowed: () => false });
  private readonly ws: WebSocket;
  private readonly gw: GatewayContext;
  private readonly onClosed: (conn: GatewayConnection) => void;
  private readonly remote: string | undefined;
  private readonly onAuthenticated: (() => void) | undefined;
  /** why this socket's browser origin may not connect (origin.ts); `connect` is refused with it */
  private readonly refusedOrigin: string | undefined;
  /** decoded bytes of this connection's attachments being prepared now (run-intake.ts caps it) */
  readonly attachmentsInFlight = { bytes: 0 };
  /** requests dispatched and not answered yet */
  private inFlight = 0;
  /** who started this connection's runs, for the audit ledger; set by a successful `connect` */
  actor = "unknown";
  /** who connected, for the log lines; set by a successful `connect` */
  private peer: { client: string; mode: string; role: string } | undefined;
  /** why we closed the socket (the disconnect line's reason); unset means the client closed it */
  private closeCause: { reason: string; code: number } | undefined;
  private readonly backpressure: BackpressureMonitor;

  constructor(
    ws: WebSocket,
    gw: GatewayContext,
    onClosed: (conn: GatewayConnection) => void,
    remote?: string,
    onAuthenticated?: () => void,
    refusedOrigin?: string,
  ) {
    this.ws = ws;
    this.gw = gw;
    this.onClosed = onClosed;
    this.remote = remote;
    this.onAuthenticated = onAuthenticated;
    this.refusedOrigin = refusedOrigin;
    this.backpressure = new BackpressureMonitor({
      limitBytes: gw.limits.maxBufferedBytes,
      graceMs: gw.limits.slowConsumerMs,
      now: () => gw.now(),
    });
    ws.on("message", (data, isBinary) => this.onMessage(data, isBinary));
    ws.on("close", (code) => {
      this.logDisconnect(code);
      this.markClosed();
    });
    // errors (oversized frame, reset by peer) are followed by "close", whose log line carries this as the reason
    ws.on("error", (err) => this.onSocketError(err));
    this.handshakeTimer = setTimeout(() => {
      this.closeCause = { reason: "handshake timeout", code: CLOSE.policy };
      this.close(CLOSE.policy, "connect timeout");
    }, gw.limits.handshakeTimeoutMs);
    this.handshakeTimer.unref();
    const challenge: ConnectChallenge = { nonce: this.nonce, ts: gw.now() };
    this.sendEventJson(CHALLENGE_PREFIX, JSON.stringify(challenge));
  }

  get ready(): boolean {
    return this.state === "ready";
  }

  get scopes(): readonly string[] {
    return this.access.scopes;
  }

  get seesAllRuns(): boolean {
    return this.access.seesAllRuns;
  }

  canSee(sessionKey: string, runId: string): boolean {
    return this.state === "ready" && this.access.canSeeRun(sessionKey, runId);
  }

  canReadSession(sessionKey: string): boolean {
    return this.state === "ready" && this.access.canSeeSession(sessionKey);
  }

  canApprove(sessionKey: string): boolean {
    return this.state === "ready" && this.access.canApprove(sessionKey);
  }

  sendEventJson(prefix: string, payloadJson: string): void {
    this.sendText(`${prefix}${payloadJson},"seq":${++this.seq}}`);
  }

  /** Close politely; a peer that does not answer the close handshake is cut off by `terminate`. */
  close(code: number, reason: string): void {
    if (this.state === "closed") return;
    // the gateway closes with "going away" only when it stops; every other cause is set before calling here
    this.closeCause ??= { reason: code === CLOSE.goingAway ? "shutdown" : reason, code };
    this.markClosed();
    try {
      this.ws.close(code, reason);
    } catch {
      this.ws.terminate();
    }
  }

  terminate(): void {
    this.markClosed();
    this.ws.terminate();
  }

  /** resolves once the socket is closed (or at once if it is) */
  whenClosed(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => this.ws.once("close", () => resolve()));
  }

  private onSocketError(err: Error): void {
    const tooBig = (err as NodeJS.ErrnoException).code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH";
    if (tooBig && this.state === "handshake") {
      // ws refused the frame from its header and sent 1009; the rest of it is not worth reading
      this.closeCause = {
        reason: `frame over ${this.gw.limits.preAuthMaxBytes} bytes before connect`,
        code: CLOSE.tooBig,
      };
      this.terminate();
      return;
    }
    this.closeCause ??= { reason: `socket error: ${err.message}`, code: CLOSE_ABNORMAL };
    this.gw.logger.debug("socket error", { conn: this.connId, error: err.message });
  }

  private logDisconnect(wsCode: number): void {
    const cause = this.closeCause;
    this.gw.logger.info("disconnect", {
      conn: this.connId,
      client: this.peer?.client,
      mode: this.peer?.mode,
      role: this.peer?.role,
      remote: this.remote,
      code: cause?.code ?? wsCode,
      reason: cause?.reason ?? "client closed",
    });
  }

  private markClosed(): void {
    if (this.state === "closed") return;
    this.state = "closed";
    if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
    if (this.slowReaderTimer) clearTimeout(this.slowReaderTimer);
    this.releaseSlot?.();
    this.onClosed(this);
  }

  /**
   * Every frame goes through here. A client that stops reading makes our send queue grow; once it has stayed over
   * the limit for `slowConsumerMs` without draining (backpressure.ts) the socket is dropped instead of written to,
   * so one slow consumer can neither grow our memory nor hold up the others, while a big reply that a fast reader
   * is still taking in is not mistaken for one.
   */
  private sendText(text: string): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    const verdict = this.backpressure.beforeSend(this.queuedBytes());
    if (verdict.drop) {
      this.dropSlowReader(verdict);
      return;
    }
    this.coalesce();
    if (!verdict.watchFlush) this.ws.send(text);
    else {
      this.ws.send(text, () => this.backpressure.afterFlush(this.queuedBytes()));
      this.armSlowReaderCheck();
    }
  }

  /**
   * Bytes sent to this client that it has not taken yet and that we still hold: the socket's writable buffer
   * (frames the kernel would not take, corked frames of this tick) plus what ws's sender keeps queued (frames
   * waiting behind a compression). ws's `bufferedAmount` is the same sum while the socket is attached; before or
   * after, it is ws's own count. The kernel's socket buffer is not ours to count and is bounded by the OS.
   */
  private queuedBytes(): number {
    const inner = this.ws as unknown as {
      _socket?: { writableLength: number } | null;
      _sender?: { _bufferedBytes?: number };
    };
    if (!inner._socket) return this.ws.bufferedAmount;
    return inner._socket.writableLength + (inner._sender?._bufferedBytes ?? 0);
  }

  /**
   * While the queue is over the limit, the rule is checked again when the grace ends, so a reader that stalls
   * after the last frame we sent is cut on time instead of at the next frame (a tick may be 30 s away).
   */
  private armSlowReaderCheck(): void {
    if (this.slowReaderTimer) return;
    const due = this.backpressure.checkDueInMs();
    if (due === undefined) return;
    this.slowReaderTimer = setTimeout(() => {
      this.slowReaderTimer = undefined;
      if (this.state === "closed" || this.ws.readyState !== WebSocket.OPEN) return;
      const verdict = this.backpressure.check(this.queuedBytes());
      if (verdict.drop) this.dropSlowReader(verdict);
      else if (verdict.watchFlush) this.armSlowReaderCheck();
    }, due + 1);
    this.slowReaderTimer.unref();
  }

  private dropSlowReader(verdict: Extract<SendVerdict, { drop: true }>): void {
    this.closeCause = { reason: "slow reader", code: CLOSE_ABNORMAL };
    this.gw.logger.warn("slow reader dropped", {
      conn: this.connId,
      client: this.peer?.client,
      unreadBytes: verdict.unreadBytes,
      limit: this.gw.limits.maxBufferedBytes,
      overMs: verdict.overMs,
      rule: verdict.reason,
    });
    this.terminate();
  }

  /**
   * Frames sent to this connection in the same tick (an assistant delta and the chat delta it flushed, the events
   * of several runs an operator watches) leave in one write instead of one system call each, which is most of the
   * gateway's CPU per streamed token. The socket is corked at the first frame and uncorked when the tick ends, so
   * nothing waits longer than the code that is running anyway; order is unchanged. (`_socket` is the ws library's
   * underlying net.Socket; without it frames go out one by one, as before.)
   */
  private coalesce(): void {
    if (this.corked) return;
    const socket = (this.ws as unknown as { _socket?: { cork(): void; uncork(): void } | null })._socket;
    if (!socket) return;
    socket.cork();
    this.corked = true;
    process.nextTick(() => {
      this.corked = false;
      socket.uncork();
    });
  }

  private respond(id: string, ok: boolean, payloadOrError: unknown, requestBytes = 0): void {
    if (!ok) {
      this.sendText(errorFrameWithin(id, payloadOrError as ErrorShape, errorReplyBudget(requestBytes)));
      return;
    }
    // the frame's constant part is written once; JSON.stringify of the whole object gives the same text, except
    // that it leaves out a payload that is undefined (or serializes to nothing), which goes that way still
    const payload = payloadOrError === undefined ? undefined : JSON.stringify(payloadOrError);
    if (payload === undefined) this.sendText(JSON.stringify({ type: "res", id, ok: true, payload: payloadOrError }));
    else this.sendText(`{"type":"res","id":${JSON.stringify(id)},"ok":true,"payload":${payload}}`);
  }

  private replyTo(id: string, requestBytes: number): Reply {
    return {
      ok: (payload) => this.respond(id, true, payload),
      error: (error) => this.respond(id, false, error, requestBytes),
    };
  }

  /** Pre-auth failure: answer once, then close this socket only. */
  private refuse(id: string, error: ErrorShape, code: number = CLOSE.policy): void {
    // not the message: a JSON syntax error quotes the frame, which may hold the token
    const reason = error.code === ErrorCodes.unauthorized ? "auth failed" : "protocol error";
    this.closeCause = { reason, code };
    this.respond(id, false, error);
    this.close(code, error.code);
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.state === "closed") return;
    const preAuth = this.state === "handshake";
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    const bad = (id: string, message: string, details?: unknown, code: string = ErrorCodes.invalidRequest) => {
      const error: ErrorShape = { code, message, ...(details ? { details } : {}) };
      if (preAuth) this.refuse(id, error);
      else this.respond(id, false, error, bytes.length);
    };
    if (isBinary) {
      bad(UNKNOWN_REQUEST_ID, "binary frames are not supported: send JSON text frames");
      return;
    }
    // before JSON.parse: a frame built to be expensive to parse is refused after its first few kilobytes
    const tooComplex = findLimitProblem(bytes);
    if (tooComplex) {
      const inParams = tooComplex.path.startsWith("frame.params");
      bad(
        tooComplex.id || UNKNOWN_REQUEST_ID,
        `${tooComplex.path}: ${tooComplex.message}`,
        undefined,
        inParams ? ErrorCodes.invalidParams : ErrorCodes.invalidRequest,
      );
      return;
    }
    const text = bytes.toString("utf8");
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      bad(UNKNOWN_REQUEST_ID, `malformed JSON: ${(err as Error).message}`);
      return;
    }
    const parsed = parseWith(requestFrameSchema, raw, "frame");
    if (!parsed.ok) {
      const id = (raw as { id?: unknown } | null)?.id;
      bad(typeof id === "string" && id !== "" ? id : UNKNOWN_REQUEST_ID, parsed.error.message, parsed.error.details);
      return;
    }
    const frame = parsed.value as RequestFrame;
    if (preAuth) {
      if (frame.method !== "connect") {
        bad(frame.id, `the first frame must be a connect request, got "${frame.method}"`);
        return;
      }
      this.handleConnect(frame);
      return;
    }
    if (frame.method === "connect") {
      bad(frame.id, "already connected: connect is only valid as the first frame");
      return;
    }
    void this.dispatch(frame, bytes.length);
  }

  private handleConnect(frame: RequestFrame): void {
    const parsed = parseParams(connectParamsSchema, frame.params);
    if (!parsed.ok) {
      this.refuse(frame.id, parsed.error);
      return;
    }
    const params = parsed.value;
    if (params.minProtocol > PROTOCOL_VERSION || params.maxProtocol < PROTOCOL_VERSION) {
      this.refuse(frame.id, {
        code: ErrorCodes.invalidRequest,
        message: `protocol mismatch: the client speaks ${params.minProtocol}..${params.maxProtocol}, this gateway speaks ${PROTOCOL_VERSION}`,
        details: { expectedProtocol: PROTOCOL_VERSION },
      });
      return;
    }
    if (this.refusedOrigin !== undefined) {
      this.gw.logger.warn("origin refused", { conn: this.connId, remote: this.remote, reason: this.refusedOrigin });
      this.refuse(frame.id, { code: ErrorCodes.forbidden, message: this.refusedOrigin });
      return;
    }
    const auth = authenticate(params, { tokens: this.gw.tokens, nonce: this.nonce, now: this.gw.now() });
    if ("error" in auth) {
      this.refuse(frame.id, auth.error);
      return;
    }
    // counted against gateway.maxConnections / maxConnectionsPerToken from here until the socket closes
    const admitted = this.gw.connections.admit(auth.grant);
    if (!admitted.ok) {
      this.gw.logger.warn("connection refused", {
        conn: this.connId,
        remote: this.remote,
        reason: admitted.error.message,
      });
      this.refuse(frame.id, admitted.error, CLOSE.tryAgainLater);
      return;
    }
    this.releaseSlot = admitted.release;
    if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = undefined;
    setMessageLimit(this.ws, this.gw.limits.maxPayload);
    this.onAuthenticated?.();
    const role = params.role ?? "operator";
    this.access = new ClientAccess(grantScopes(params.scopes, auth.grant.scopes), auth.grant);
    const hello: HelloOk = {
      type: "hello-ok",
      protocol: PROTOCOL_VERSION,
      server: { version: this.gw.version, connId: this.connId },
      // exactly what this gateway answers: the method registry, and the events it sends
      features: { methods: [...this.gw.methods.keys()], events: [...GATEWAY_EVENTS] },
      snapshot: {
        presence: [],
        health: { ok: true, ts: this.gw.now() },
        stateVersion: { presence: 0, health: 0 },
        uptimeMs: this.gw.uptimeMs(),
      },
      auth: { role, scopes: [...this.scopes] },
      policy: {
        maxPayload: this.gw.limits.maxPayload,
        maxBufferedBytes: this.gw.limits.maxBufferedBytes,
        tickIntervalMs: this.gw.limits.tickIntervalMs,
        attachments: { maxBytes: ATTACHMENT_LIMITS.maxBytes, maxImageBytes: ATTACHMENT_LIMITS.maxBytes },
      },
    };
    this.respond(frame.id, true, hello);
    this.state = "ready";
    this.gw.broadcaster.add(this);
    this.peer = { client: params.client.id, mode: params.client.mode, role };
    // a device block got here only if authenticate() verified it: the key-bound id says more than a chosen name
    this.actor = params.device ? `device:${params.device.id.toLowerCase()}` : params.client.id;
    this.gw.logger.info("connect", {
      conn: this.connId,
      client: params.client.id,
      mode: params.client.mode,
      role,
      scopes: this.scopes.length,
      remote: this.remote,
    });
  }

  private async dispatch(frame: RequestFrame, requestBytes: number): Promise<void> {
    const reply = this.replyTo(frame.id, requestBytes);
    const limit = this.gw.limits.maxInFlightPerConnection;
    if (this.inFlight >= limit) {
      reply.error({
        code: ErrorCodes.unavailable,
        message: `${frame.method}: ${this.inFlight} requests of this connection are still unanswered (limit ${limit}); wait for their answers`,
        retryable: true,
      });
      return;
    }
    this.inFlight++;
    try {
      await this.run(frame, reply);
    } finally {
      this.inFlight--;
    }
  }

  private async run(frame: RequestFrame, reply: Reply): Promise<void> {
    const method = this.gw.methods.get(frame.method);
    if (!method && OPENCLAW_METHODS.has(frame.method)) {
      // an OpenClaw client calls what its protocol defines; a clear refusal keeps it working where an unknown
      // method would make it treat the gateway as broken
      reply.error({
        code: ErrorCodes.unsupported,
        message: `${frame.method} is not supported by this gateway (Loopgate serves the methods listed in hello-ok.features.methods)`,
        details: { method: frame.method },
      });
      return;
    }
    if (!method) {
      reply.error({
        code: ErrorCodes.unknownMethod,
        message: `frame.method: unknown method "${frame.method}"`,
        details: { methods: [...this.gw.methods.keys()] },
      });
      return;
    }
    if (!hasScope(this.scopes, method.scope)) {
      const scope = requiredScope(method.scope);
      reply.error({
        code: ErrorCodes.unauthorized,
        message: `${method.name} needs scope ${scope} (granted: ${this.scopes.join(", ") || "none"})`,
        details: { code: "MISSING_SCOPE", missingScope: scope, requiredScopes: [scope] },
      });
      return;
    }
    const parsed = parseParams(method.params, frame.params);
    if (!parsed.ok) {
      reply.error(parsed.error);
      return;
    }
    const timed = this.gw.logger.isEnabled?.("debug") ?? true;
    const t0 = timed ? performance.now() : 0;
    let failed: ErrorShape | undefined;
    try {
      await method.handle({ params: parsed.value, conn: this, gw: this.gw, reply });
    } catch (err) {
      failed = toErrorShape(err, this.gw.isTransientStoreError);
      // a bug or a broken store, not a bad request: the operator has to hear about it
      if (failed.code === ErrorCodes.internal) {
        this.gw.logger.error("rpc failed", { conn: this.connId, method: method.name, error: failed.message });
      }
      reply.error(failed);
    }
    if (timed) {
      const ms = Math.round((performance.now() - t0) * 100) / 100;
      this.gw.logger.debug("rpc", { conn: this.connId, method: method.name, ms, error: failed?.code });
    }
  }
}
