import { changedConfigPaths, needsRestart, withRunningRestartKeys } from "../config/changes.js";
import type { LoopgateConfig } from "../config/schema.js";
import type { Logger } from "../infra/logger.js";

/** What applying a new config did: every changed path, those that wait for a restart, and those applied. */
export interface ConfigChange {
  changed: string[];
  /** changed restart keys (config/changes.ts RESTART_KEYS): they keep their running values until a restart */
  restart: string[];
  /** changed paths the process took: the next run sees them */
  applied: string[];
}

/**
 * Told about an applied config: the new one, the one before it and the applied paths. May be async (closing an MCP
 * server); a consumer that fails is logged and the others still get the config.
 */
export type ConfigConsumer = (next: LoopgateConfig, prev: LoopgateConfig, applied: readonly string[]) => unknown;

/**
 * The process's config as it is now (SPEC 26): the one place a validated new config is applied. `apply` keeps the
 * restart keys at their running values, tells the runtime and the other consumers (MCP servers, cron, diagnostics)
 * what changed, and answers which paths changed and which wait for a restart. Nothing here runs per turn: readers
 * read `runtime.config`, a plain field the runtime swaps.
 */
export class LiveConfig {
  private value: LoopgateConfig;
  private readonly consumers: Array<{ name: string; consume: ConfigConsumer }> = [];
  private applying: Promise<unknown> = Promise.resolve();

  constructor(
    initial: LoopgateConfig,
    private readonly logger: Logger,
  ) {
    this.value = initial;
  }

  get current(): LoopgateConfig {
    return this.value;
  }

  /** Adds a consumer, told in the order added; returns its removal. */
  onApply(name: string, consume: ConfigConsumer): () => void {
    const entry = { name, consume };
    this.consumers.push(entry);
    return () => {
      const i = this.consumers.indexOf(entry);
      if (i >= 0) this.consumers.splice(i, 1);
    };
  }

  /** Applies `next` (already validated and checked); one apply at a time, in call order. */
  apply(next: LoopgateConfig): Promise<ConfigChange> {
    const run = this.applying.then(() => this.applyNow(next));
    this.applying = run.catch(() => undefined);
    return run;
  }

  private async applyNow(next: LoopgateConfig): Promise<ConfigChange> {
    const prev = this.value;
    const changed = changedConfigPaths(prev, next);
    const restart = changed.filter(needsRestart);
    const applied = changed.filter((p) => !needsRestart(p));
    if (applied.length === 0) return { changed, restart, applied };
    this.value = restart.length > 0 ? withRunningRestartKeys(next, prev) : next;
    for (const { name, consume } of this.consumers) {
      try {
        await consume(this.value, prev, applied);
      } catch (err) {
        this.logger.error(`config reload: applying the new config to ${name} failed`, {
          error: (err as Error)?.message ?? String(err),
        });
      }
    }
    return { changed, restart, applied };
  }
}
