import {
  Client,
  type Tool as McpTool,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  type Transport,
} from "@modelcontextprotocol/client";
import type { McpServerConfig } from "../../config/schema.js";
import { type Clock, systemClock } from "../../infra/clock.js";
import { redactText } from "../sanitize.js";
import { toolFilterMatcher } from "./glob.js";
import { McpStdioTransport } from "./stdio-transport.js";
import { createTransport, type McpTransportKind, transportKind } from "./transport.js";

/**
 * One configured MCP server: connect (bounded by connectionTimeoutMs), list its tools (every page, through
 * toolFilter), keep that catalog fresh on `notifications/tools/list_changed`, and reconnect with capped, jittered
 * exponential backoff when the connection fails or is lost. Nothing here throws at the caller except callTool; the
 * state says what is wrong. The state changes only on real changes (a server that keeps failing stays `failed`
 * while it is retried, with its newest `lastError`), so whoever logs the changes logs each one once.
 */

export type McpServerState = "connecting" | "ready" | "failed" | "closed";

export interface McpServerStatus {
  server: string;
  transport: McpTransportKind;
  state: McpServerState;
  /** tools offered (after toolFilter); a server that went down keeps the catalog it last had */
  toolCount: number;
  lastError?: string;
  /** epoch ms of the last successful connect or tool listing */
  lastSuccessAt?: number;
}

export interface McpToolInfo {
  /** the tool's name on its server */
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  /** the server marks it readOnlyHint: it may run alongside other tools */
  readOnly: boolean;
}

export interface McpBackoff {
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_MCP_BACKOFF: McpBackoff = { baseMs: 1000, maxMs: 60000 };
/** a server whose list never ends is cut off here rather than listed forever */
const MAX_TOOL_PAGES = 100;
const CLIENT_INFO = { name: "loopgate", version: "0.1.0" };

export interface McpConnectionOptions {
  /** the parent environment: PATH/HOME/LANG/TERM and "${ENV}" references come from it */
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  /** [0, 1): the jitter of reconnect delays */
  random?: () => number;
  backoff?: McpBackoff;
  onStateChange?: (status: McpServerStatus) => void;
  /** the catalog changed (first listing, list_changed, reconnect) */
  onToolsChanged?: () => void;
}

/**
 * The wait before reconnect attempt `attempt` (0 first): baseMs doubling up to maxMs, of which half is fixed and
 * half random (`random` in [0, 1)), so the servers of many gateways restarting together do not retry in step.
 */
export function reconnectDelay(attempt: number, backoff: McpBackoff, random: number): number {
  const cap = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(cap / 2 + (cap / 2) * random);
}

/** A call to a server that is not connected; the message names the server, its state and its last error. */
export class McpServerUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "McpServerUnavailableError";
  }
}

export class McpServerConnection {
  readonly transport: McpTransportKind;
  private state: McpServerState = "connecting";
  private lastError?: string;
  private lastSuccessAt?: number;
  private catalog: McpToolInfo[] = [];
  private client?: Client;
  private stdio?: McpStdioTransport;
  private attempt = 0;
  private retryTimer?: unknown;
  /** bumped by every connect attempt and by close, so a late answer of an old attempt changes nothing */
  private generation = 0;
  private closed = false;
  /** the connect attempt under way and its transport, so close() can end it and wait for it */
  private inFlight?: Promise<void>;
  private attemptTransport?: Transport;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly backoff: McpBackoff;
  private readonly offered: (tool: string) => boolean;

  constructor(
    readonly server: string,
    private readonly config: McpServerConfig,
    private readonly opts: McpConnectionOptions = {},
  ) {
    this.transport = transportKind(config);
    this.clock = opts.clock ?? systemClock;
    this.random = opts.random ?? Math.random;
    this.backoff = opts.backoff ?? DEFAULT_MCP_BACKOFF;
    this.offered = toolFilterMatcher(config.toolFilter);
  }

  /** Starts connecting in the background; never throws. */
  start(): void {
    if (this.closed || this.generation > 0) return;
    this.opts.onStateChange?.(this.status());
    this.attemptNow();
  }

  private attemptNow(): void {
    const attempt = this.connect();
    this.inFlight = attempt;
    void attempt.finally(() => {
      if (this.inFlight === attempt) this.inFlight = undefined;
    });
  }

  status(): McpServerStatus {
    return {
      server: this.server,
      transport: this.transport,
      state: this.state,
      toolCount: this.catalog.length,
      ...(this.lastError !== undefined ? { lastError: this.lastError } : {}),
      ...(this.lastSuccessAt !== undefined ? { lastSuccessAt: this.lastSuccessAt } : {}),
    };
  }

  tools(): readonly McpToolInfo[] {
    return this.catalog;
  }

  /** The stdio child's pid while one runs. */
  pid(): number | undefined {
    return this.stdio?.pid;
  }

  /**
   * Calls `tool` with requestTimeoutMs. Throws McpServerUnavailableError when the server is not connected, and the
   * SDK's error (timeout, protocol error, connection lost) otherwise; a result with isError is returned as is.
   */
  async callTool(tool: string, args: Record<string, unknown>, signal?: AbortSignal) {
    const client = this.client;
    if (this.state !== "ready" || !client) throw new McpServerUnavailableError(this.unavailableReason());
    const ms = this.config.requestTimeoutMs;
    try {
      return await client.callTool({ name: tool, arguments: args }, { signal, timeout: ms });
    } catch (err) {
      if (err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout) {
        throw new Error(`no answer within ${ms} ms (requestTimeoutMs)`);
      }
      throw err;
    }
  }

  unavailableReason(): string {
    const why = this.lastError ? `: ${this.lastError}` : "";
    const state = this.state === "connecting" ? "still connecting" : this.state === "closed" ? "closed" : "down";
    return `MCP server "${this.server}" is ${state}${why}`;
  }

  /** Stops retrying, closes the connection and waits until a stdio child has exited. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.generation++;
    if (this.retryTimer !== undefined) this.clock.clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => undefined);
    // an attempt under way ends when its transport closes (its pending initialize is rejected)
    await this.attemptTransport?.close().catch(() => undefined);
    await this.stdio?.close();
    await this.inFlight;
    this.setState("closed");
  }

  private async connect(): Promise<void> {
    const generation = ++this.generation;
    let transport: Transport | undefined;
    let client: Client | undefined;
    let timer: unknown;
    try {
      transport = createTransport(this.server, this.config, this.opts.env ?? process.env);
      this.attemptTransport = transport;
      this.stdio = transport instanceof McpStdioTransport ? transport : undefined;
      const connected = new Client(CLIENT_INFO, {
        listChanged: { tools: { autoRefresh: false, debounceMs: 0, onChanged: () => void this.refresh(connected) } },
      });
      client = connected;
      const ms = this.config.connectionTimeoutMs;
      const timeout = new Promise<never>((_, reject) => {
        timer = this.clock.setTimeout(() => reject(new Error(`no answer within ${ms} ms (connectionTimeoutMs)`)), ms);
      });
      await Promise.race([
        (async () => {
          await connected.connect(transport as Transport, { timeout: ms });
          return this.listTools(connected, ms);
        })().then((tools) => {
          if (generation !== this.generation) return;
          this.catalog = tools;
        }),
        timeout,
      ]);
      if (generation !== this.generation) {
        await connected.close().catch(() => undefined);
        return;
      }
      connected.onclose = () => this.lost(generation);
      this.client = connected;
      this.attempt = 0;
      this.lastSuccessAt = this.clock.now();
      this.lastError = undefined;
      this.setState("ready");
      this.opts.onToolsChanged?.();
    } catch (err) {
      if (generation !== this.generation) return;
      // a late answer of this attempt must not land after it was given up
      this.generation++;
      const reason = this.describe(err);
      await client?.close().catch(() => undefined);
      await transport?.close().catch(() => undefined);
      this.fail(reason);
    } finally {
      if (timer !== undefined) this.clock.clearTimeout(timer);
      if (this.attemptTransport === transport) this.attemptTransport = undefined;
    }
  }

  /** The server went away after it was ready: keep its catalog (calls say it is down), retry. */
  private lost(generation: number): void {
    if (generation !== this.generation || this.closed) return;
    this.client = undefined;
    this.fail(`connection lost${this.stdioDetail()}`);
  }

  private fail(reason: string): void {
    this.lastError = redactText(reason);
    this.setState("failed");
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.closed) return;
    const delay = reconnectDelay(this.attempt++, this.backoff, this.random());
    this.retryTimer = this.clock.setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.closed) this.attemptNow();
    }, delay);
  }

  private async refresh(client: Client): Promise<void> {
    if (client !== this.client) return;
    try {
      const tools = await this.listTools(client, this.config.requestTimeoutMs);
      if (client !== this.client) return;
      this.catalog = tools;
      this.lastSuccessAt = this.clock.now();
      this.opts.onToolsChanged?.();
    } catch (err) {
      if (client === this.client)
        this.lastError = redactText(`listing tools after list_changed: ${this.describe(err)}`);
    }
  }

  private async listTools(client: Client, timeout: number): Promise<McpToolInfo[]> {
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const result = await client.listTools(cursor ? { cursor } : undefined, { timeout, cacheMode: "bypass" });
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    return tools
      .filter((t) => this.offered(t.name))
      .map((t) => ({
        name: t.name,
        ...(t.description !== undefined ? { description: t.description } : {}),
        inputSchema: t.inputSchema as Record<string, unknown>,
        readOnly: t.annotations?.readOnlyHint === true,
      }));
  }

  private describe(err: unknown): string {
    let message = err instanceof Error ? err.message : String(err);
    // fetch says only "fetch failed"; the reason (ECONNREFUSED, a DNS miss, a TLS error) is in its cause
    for (let cause = (err as { cause?: unknown })?.cause, depth = 0; cause instanceof Error && depth < 3; depth++) {
      message += ` (${cause.message})`;
      cause = (cause as { cause?: unknown }).cause;
    }
    // an HTTP refusal says little by itself ("Error POSTing to endpoint"); its status says what to fix
    const http =
      err instanceof SdkHttpError ? ` (HTTP ${err.status}${err.statusText ? ` ${err.statusText}` : ""})` : "";
    return `${message}${http}${this.stdioDetail()}`;
  }

  /** For a stdio server: how the child ended and the last line of its stderr, which usually says why. */
  private stdioDetail(): string {
    if (!this.stdio) return "";
    const exit = this.stdio.exitDescription();
    const tail = this.stdio.stderrTail().split("\n").slice(-3).join(" | ");
    return `${exit ? `; the process ${exit}` : ""}${tail ? `; stderr: ${tail}` : ""}`;
  }

  private setState(state: McpServerState): void {
    if (this.state === state) return;
    this.state = state;
    this.opts.onStateChange?.(this.status());
  }
}
