/** usage.summary on the wire (SPEC 25): the cost ledger totalled per day and group. */
import { z } from "zod";

export const USAGE_GROUPS = ["agent", "session", "token", "model"] as const;

export const usageSummaryParams = z.strictObject({
  by: z.enum(USAGE_GROUPS).default("agent"),
  /** epoch ms; default: 7 days before now */
  since: z.number().int().nonnegative().optional(),
  /** epoch ms, exclusive; default: now */
  until: z.number().int().nonnegative().optional(),
  agentId: z.string().min(1).optional(),
  sessionKey: z.string().min(1).optional(),
});
export type UsageSummaryParams = z.input<typeof usageSummaryParams>;

export interface UsageTotals {
  usd: number;
  tokens: number;
  inputTokens: number;
  outputTokens: number;
  calls: number;
  /** calls whose model had no configured price: their tokens count, their cost is unknown (not in `usd`) */
  unpricedCalls: number;
}

export interface UsageSummaryResult {
  by: (typeof USAGE_GROUPS)[number];
  since: number;
  until: number;
  /** the time zone days are cut in (limits.timeZone) */
  timeZone: string;
  /** one entry per day and group, oldest first */
  days: Array<{ day: string; key: string } & UsageTotals>;
  /** one entry per group over the period, the most expensive first */
  groups: Array<{ key: string } & UsageTotals>;
  total: UsageTotals;
}
