import { ErrorCodes } from "../protocol/frames.js";
import { normalizeSessionKey } from "../session/keys.js";
import { GatewayError } from "./errors.js";
import type { Grant } from "./token-grants.js";

/**
 * The one visibility rule of SPEC 21, per connection. Everything is confined to the sessions the token grants.
 * Inside them:
 * - operator.read / operator.admin see every run and session (events, agent.wait, history, the session list);
 * - operator.write sends, and sees and aborts only the runs this connection started;
 * - aborting someone else's run, and resetting or deleting a session, takes operator.admin;
 * - exec approvals (their events, exec.approval.list / resolve) take operator.approvals or operator.admin.
 * Runs are owned by the connection that started them: another connection (even with the same token) is another
 * client.
 */
/**
 * How many of the runs it started a connection remembers, newest kept. Without a bound a client that stays connected
 * holds one entry per run for the life of its connection (and `chat.abort` without a runId walks them all). Far above
 * the runs a connection can have queued or running at once (the lanes run one turn per session at a time), so what
 * falls out is a run that ended long ago: an operator.write client can no longer `agent.wait` on it (operator.read
 * still sees every run).
 */
export const STARTED_RUNS_KEPT = 10_000;

export class ClientAccess {
  readonly scopes: readonly string[];
  private readonly grant: Grant;
  private readonly readsAll: boolean;
  private readonly admin: boolean;
  private readonly approves: boolean;
  /** runId → session key of the runs this connection started, oldest first, at most STARTED_RUNS_KEPT */
  private readonly started = new Map<string, string>();

  constructor(scopes: readonly string[], grant: Grant) {
    this.scopes = scopes;
    this.grant = grant;
    this.admin = scopes.includes("operator.admin");
    this.readsAll = this.admin || scopes.includes("operator.read");
    this.approves = this.admin || scopes.includes("operator.approvals");
  }

  /** exec approvals of a session: their events, and listing / answering them */
  canApprove(sessionKey: string): boolean {
    return this.approves && this.sessionGranted(sessionKey);
  }

  /** the config key that denies this client in-band control (`/stop`, interrupt…), undefined when it may use it */
  get commandsDeniedBy(): string | undefined {
    return this.grant.commandsDeniedBy;
  }

  /** the token's identity for the cost ledger, budgets and rate limits (Grant.identity); absent without a token */
  get tokenIdentity(): string | undefined {
    return this.grant.identity;
  }

  /** the token's own intake limits, with the config key that set them */
  get tokenLimits(): Grant["limits"] {
    return this.grant.limits;
  }

  /** the session globs this client's token grants (`["*"]`: every session); an allow-always answer holds inside them */
  get grantedSessions(): readonly string[] {
    return this.grant.sessions;
  }

  /** exec.approval.resolve (the method's scope check already required operator.approvals or admin) */
  requireApprove(sessionKey: string): void {
    this.requireGranted(sessionKey, "answer exec approvals of");
  }

  /** sees runs it did not start (operator.read / operator.admin) */
  get seesAllRuns(): boolean {
    return this.readsAll;
  }

  /** the token covers every session (the single gateway.auth.token, no token, or a `*` grant): not one tenant's */
  get seesAllSessions(): boolean {
    return this.grant.sessions.includes("*");
  }

  sessionGranted(sessionKey: string): boolean {
    return this.grant.sessionAllowed(sessionKey);
  }

  startedRun(runId: string): boolean {
    return this.started.has(runId);
  }

  /** Event delivery: a run's events reach this client. */
  canSeeRun(sessionKey: string, runId: string): boolean {
    if (!this.sessionGranted(sessionKey)) return false;
    return this.readsAll || this.started.get(runId) === sessionKey;
  }

  /** sessions.list keeps what this passes */
  canSeeSession(sessionKey: string): boolean {
    return this.readsAll && this.sessionGranted(sessionKey);
  }

  /** Called once `agent` / `chat.send` accepted a new run from this connection. */
  recordStarted(runId: string, sessionKey: string): void {
    this.started.set(runId, sessionKey);
    if (this.started.size > STARTED_RUNS_KEPT) this.started.delete(this.started.keys().next().value as string);
  }

  /** `agent` / `chat.send` into a session (the method's own scope check already required operator.write). */
  requireSend(sessionKey: string): void {
    this.requireGranted(sessionKey, "send to");
  }

  /** agent.wait, and an idempotent repeat of an existing run: its status is this client's to see. */
  requireRunVisible(runId: string, sessionKey: string | undefined): void {
    if (this.startedRun(runId)) return;
    if (!this.readsAll) throw forbidden(`run "${runId}" was not started by this client (operator.read sees every run)`);
    if (sessionKey !== undefined) this.requireGranted(sessionKey, "see runs of");
  }

  /**
   * chat.abort: which runs of the session this client may stop. `"all"` for operator.admin; otherwise its own runs
   * (asked for by runId: that one, or forbidden).
   */
  abortable(sessionKey: string, runId: string | undefined): "all" | string[] {
    this.requireGranted(sessionKey, "abort runs of");
    if (this.admin) return "all";
    if (runId !== undefined) {
      if (this.started.get(runId) !== sessionKey) {
        throw forbidden(`run "${runId}" in session "${sessionKey}" was not started by this client`);
      }
      return [runId];
    }
    // newest first: queued turns go before the active run, so none of them starts in its place
    return [...this.started]
      .filter(([, key]) => key === sessionKey)
      .map(([id]) => id)
      .reverse();
  }

  /** chat.history, sessions.get: operator.read inside a granted session. */
  requireRead(sessionKey: string | undefined): void {
    if (!this.readsAll) throw missingRead();
    if (sessionKey !== undefined) this.requireGranted(sessionKey, "read");
  }

  /**
   * A read method's optional session filter: the key as every method names it ("support-42" is
   * agent:<agent>:support-42), checked like requireRead; undefined (no filter) still needs operator.read.
   */
  readFilter(sessionKey: string | undefined, agentId: string): string | undefined {
    const key = sessionKey === undefined ? undefined : normalizeSessionKey(sessionKey, agentId).key;
    this.requireRead(key);
    return key;
  }

  /**
   * What acts on (or reads) the whole gateway, beyond any session: the exec allowlist, skill and plugin switches,
   * the gateway log. A token confined to some sessions is one tenant's; it must not change or read the others'.
   */
  requireWholeGateway(what: string): void {
    if (this.seesAllSessions) return;
    throw forbidden(
      `this client may not ${what}: it acts for every session, and its token grants sessions ${this.grant.sessions.join(", ")}`,
    );
  }

  /** sessions.reset / sessions.delete (the method's scope check already required operator.admin). */
  requireAdmin(sessionKey: string): void {
    this.requireGranted(sessionKey, "change");
  }

  private requireGranted(sessionKey: string, what: string): void {
    if (this.grant.sessionAllowed(sessionKey)) return;
    throw forbidden(
      `this client may not ${what} session "${sessionKey}": its token grants sessions ${this.grant.sessions.join(", ")}`,
    );
  }
}

function forbidden(message: string): GatewayError {
  return new GatewayError({ code: ErrorCodes.forbidden, message });
}

/** Same shape as the method-level scope refusal, so clients read it with one parser (MISSING_SCOPE). */
function missingRead(): GatewayError {
  return new GatewayError({
    code: ErrorCodes.unauthorized,
    message: "needs scope operator.read: an operator.write client sees only the runs it started",
    details: { code: "MISSING_SCOPE", missingScope: "operator.read", requiredScopes: ["operator.read"] },
  });
}
