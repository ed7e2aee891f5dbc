import type { z } from "zod";
import type { AgentService } from "../agent/service.js";
import type { CronScheduler } from "../cron/scheduler.js";
import type { DiagnosticsMonitor } from "../diagnostics/monitor.js";
import type { AuditLedger } from "../events/audit-ledger.js";
import type { Logger } from "../infra/logger.js";
import type { Semaphore } from "../infra/semaphore.js";
import type { ErrorShape, GatewayMethod } from "../protocol/frames.js";
import type { HealthResult } from "../protocol/payloads.js";
import type { ClientAccess } from "./access.js";
import type { MethodScope } from "./auth.js";
import type { Broadcaster } from "./broadcast.js";
import type { ConfigReloader } from "./config-reload.js";
import type { AuthenticatedConnections } from "./connection-caps.js";
import type { RunLog } from "./run-log.js";
import type { TokenGrants } from "./token-grants.js";

export interface GatewayLimits {
  maxPayload: number;
  maxBufferedBytes: number;
  /** how long the send backlog may stay over maxBufferedBytes before the client counts as a slow consumer */
  slowConsumerMs: number;
  /** a list reply (chat.history, sessions.list) stops adding entries before its JSON passes this */
  maxPageBytes: number;
  tickIntervalMs: number;
  preAuthMaxBytes: number;
  handshakeTimeoutMs: number;
  maxInFlightPerConnection: number;
  /** sessions one connection may follow with sessions.messages.subscribe */
  maxMessageSubscriptionsPerConnection: number;
  /** decoded attachment bytes of one connection's messages still being prepared */
  maxAttachmentBytesInFlight: number;
}

/** What every connection and method handler shares: one per running gateway. */
export interface GatewayContext {
  readonly service: AgentService;
  readonly broadcaster: Broadcaster;
  readonly logger: Logger;
  readonly runLog: RunLog;
  readonly version: string;
  /** the accepted tokens and what each grants (SPEC 21) */
  readonly tokens: TokenGrants;
  readonly limits: GatewayLimits;
  readonly methods: ReadonlyMap<string, AnyMethod>;
  now(): number;
  uptimeMs(): number;
  health(): Promise<HealthResult>;
  /** the audit ledger's writer: audit.list flushes it before reading and reports its drop count */
  readonly audit: AuditLedger;
  /** the cron scheduler (SPEC 17); started after recovery, stopped when the gateway closes */
  readonly cron: CronScheduler;
  /** the node's rule for store errors worth a retry (answered `unavailable`, retryable); never true on SQLite */
  isTransientStoreError(err: unknown): boolean;
  /** connections past `connect`, capped in total and per token (connection-caps.ts) */
  readonly connections: AuthenticatedConnections;
  /**
   * history pages are built one at a time: their work is synchronous between reads (a row of 15 MB is parsed and
   * masked in one go), so pages built side by side only block the loop longer at a stretch, and hold more at once
   */
  readonly historyPages: Semaphore;
  /** image attachments decoded at once, gateway-wide (gateway.attachments.imageConcurrency) */
  readonly imageWork: Semaphore;
  /** the stuck-session monitor, when `diagnostics.enabled` */
  readonly diagnostics?: DiagnosticsMonitor;
  /** the config file's reload and writes (config.get's hash, config.patch), when the gateway was given its file */
  readonly configFile?: ConfigReloader;
}

/** The connection as a method handler sees it. */
export interface CallerConnection {
  readonly connId: string;
  readonly scopes: readonly string[];
  /** what this client may see and control: the one visibility rule (access.ts) */
  readonly access: ClientAccess;
  /** who this client is for the audit ledger: "device:<id>" when a device identity was verified, else its client id */
  readonly actor: string;
  /** decoded bytes of this connection's attachments being prepared now (run-intake.ts caps it) */
  readonly attachmentsInFlight: { bytes: number };
}

/** A request's answer channel. `agent` answers twice (accepted, then final) with the same id. */
export interface Reply {
  ok(payload: unknown): void;
  error(error: ErrorShape): void;
}

export interface MethodCall<P> {
  params: P;
  conn: CallerConnection;
  gw: GatewayContext;
  reply: Reply;
}

export interface MethodDef<S extends z.ZodType> {
  name: GatewayMethod;
  scope: MethodScope;
  params: S;
  /** answers through `reply`; a throw becomes an error response (see errors.ts) */
  handle(call: MethodCall<z.output<S>>): void | Promise<void>;
}

export interface AnyMethod {
  name: GatewayMethod;
  scope: MethodScope;
  params: z.ZodType;
  handle(call: MethodCall<unknown>): void | Promise<void>;
}

/** Keeps each handler typed against its own params schema while the registry holds them side by side. */
export function defineMethod<S extends z.ZodType>(def: MethodDef<S>): AnyMethod {
  return def as unknown as AnyMethod;
}
