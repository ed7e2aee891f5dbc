import type { AcceptedRun, AgentFinal, AgentRequest, AgentService } from "../agent/service.js";
import type { EventBusPort } from "../events/bus-port.js";
import type { AgentEvent } from "../infra/events.js";
import type { Logger } from "../infra/logger.js";

/**
 * The gateway's run log lines: accepted (from the RPC intake), started (the bus's lifecycle start), ended (the
 * service's final result, which is where model, tokens and duration are known). Everything is observed from the
 * gateway side; the run itself never calls the logger. No message text or credentials are logged.
 */
export class RunLog {
  private readonly logger: Logger;
  private readonly service: AgentService;
  private unsubscribe: (() => void) | undefined;

  constructor(logger: Logger, service: AgentService) {
    this.logger = logger;
    this.service = service;
  }

  /** "run started" is logged by the node that runs it (the node that accepted it logs the accept). */
  attach(bus: EventBusPort): void {
    this.unsubscribe = bus.subscribeLocal((ev) => this.onEvent(ev));
  }

  detach(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /** A message the gateway accepted; a repeated idempotency key is logged but not followed a second time. */
  accepted(run: AcceptedRun, req: AgentRequest): void {
    const r = run.receipt;
    // the fields are built only for a line that is written (the default level is warn)
    if (this.infoOn())
      this.logger.info("run accepted", {
        runId: run.runId,
        session: run.sessionKey,
        queueMode: req.queueMode,
        receipt: r.kind,
        position: r.kind === "queued" ? r.position : undefined,
        mode: r.kind === "queued" ? r.mode : undefined,
        into: r.kind === "steered" || r.kind === "collected" ? r.into : undefined,
        existing: run.existing || undefined,
      });
    if (!run.existing) this.follow(run.runId, run.sessionKey);
  }

  /** Logs the run's end once it has one (also for runs re-queued by recovery, which no client sent here). */
  follow(runId: string, sessionKey: string): void {
    this.service.final(runId).then(
      (final) => this.ended(final, sessionKey),
      (err) => this.logger.error("run result unavailable", { runId, session: sessionKey, error: err }),
    );
  }

  private infoOn(): boolean {
    return this.logger.isEnabled?.("info") ?? true;
  }

  private onEvent(ev: AgentEvent): void {
    if (ev.stream !== "lifecycle" || ev.data.phase !== "start" || !this.infoOn()) return;
    this.logger.info("run started", { runId: ev.runId, session: ev.sessionKey });
  }

  private ended(final: AgentFinal, sessionKey: string): void {
    // aborted runs were asked for and dropped ones follow the queue policy; only a run that failed is an error
    const failed = final.summary === "failed" && final.stopReason !== "dropped";
    if (!failed && !this.infoOn()) return;
    const meta = final.result.meta;
    const fields = {
      runId: final.runId,
      session: sessionKey,
      status: final.status,
      summary: final.summary,
      stopReason: final.stopReason,
      durationMs: meta.durationMs,
      tokensIn: meta.usage.input,
      tokensOut: meta.usage.output,
      model: meta.model || undefined,
      mergedInto: final.mergedInto,
      error: final.error,
    };
    if (failed) this.logger.error("run ended", fields);
    else this.logger.info("run ended", fields);
  }
}
