import type { QueueMode } from "../config/schema.js";
import { queueModes } from "../protocol/enums.js";

/** Which queue mode a message gets (SPEC 2); pure, so it is tested on its own. */

export type { QueueMode };

export function isQueueMode(v: unknown): v is QueueMode {
  return typeof v === "string" && (queueModes as readonly string[]).includes(v);
}

/** Per message > session > channel > global (SPEC 2). */
export function resolveQueueMode(input: {
  message?: string;
  session?: string;
  channel?: string;
  byChannel: Record<string, QueueMode>;
  global: QueueMode;
}): QueueMode {
  if (isQueueMode(input.message)) return input.message;
  if (isQueueMode(input.session)) return input.session;
  if (input.channel && isQueueMode(input.byChannel[input.channel])) return input.byChannel[input.channel];
  return input.global;
}
