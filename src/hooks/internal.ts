import { access, readdir, readFile } from "node:fs/promises";
import { basename, isAbsolute, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseFrontMatter } from "./front-matter.js";
import { describeError, type HookLogger, isPlainObject } from "./logger.js";

/**
 * Internal (gateway) hooks: small scripts the operator drops into a hook directory (or names in config) that
 * react to commands and lifecycle events. Unlike plugin hooks they return nothing; they act through the event
 * (mutating `context`, pushing `messages` for the user).
 */

/** The event keys the gateway fires. Others are accepted (a newer gateway may fire more) but warned about. */
export const INTERNAL_HOOK_EVENTS = [
  "agent:bootstrap",
  "command:new",
  "command:reset",
  "command:stop",
  "gateway:startup",
  "gateway:shutdown",
  "message:received",
  "message:sent",
] as const;

export type InternalHookEventKey = (typeof INTERNAL_HOOK_EVENTS)[number];

/** A bootstrap file as the prompt builder sees it; hooks may add, remove or edit entries. */
export interface BootstrapFileEntry {
  name: string;
  path?: string;
  content?: string;
  missing?: boolean;
}

/** `agent:bootstrap` context: `bootstrapFiles` is the live list the system prompt will be built from. */
export interface AgentBootstrapContext<F extends BootstrapFileEntry = BootstrapFileEntry> {
  workspaceDir: string;
  bootstrapFiles: F[];
  agentId?: string;
  sessionKey?: string;
}

export interface InternalHookEvent<C extends object = Record<string, unknown>> {
  type: string;
  action?: string;
  context: C;
  /** Lines a hook wants shown to the user (e.g. "memory saved"); the caller decides how to deliver them. */
  messages?: string[];
}

export type InternalHookHandler<C extends object = Record<string, unknown>> = (
  event: InternalHookEvent<C>,
) => void | Promise<void>;

// Each handler is written against its own event's context; stored erased, since one key may carry any context.
type StoredHandler = (event: InternalHookEvent<object>) => void | Promise<void>;

interface Registration {
  key: string;
  name: string;
  handler: StoredHandler;
  /** Global registration counter: ordering spans the `type` and `type:action` lists. */
  seq: number;
}

const KEY_PATTERN = /^[a-z][a-z0-9_-]*(:[a-z][a-z0-9_-]*)?$/;

export function isInternalHookKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

/** Builds an event from a `type:action` key, the form hooks and config use. */
export function internalHookEvent<C extends object>(key: string, context: C, messages: string[] = []) {
  const colon = key.indexOf(":");
  const type = colon === -1 ? key : key.slice(0, colon);
  const action = colon === -1 ? undefined : key.slice(colon + 1);
  return { type, action, context, messages } satisfies InternalHookEvent<C>;
}

export class InternalHookRegistry {
  private readonly byKey = new Map<string, Registration[]>();
  private seq = 0;

  constructor(private readonly logger: HookLogger) {}

  /**
   * `key` is a type (`command`, every command) or `type:action` (`command:new`). Returns a function that
   * removes exactly this registration.
   */
  register<C extends object>(key: string, handler: InternalHookHandler<C>, opts: { name: string }): () => void {
    if (!isInternalHookKey(key)) {
      throw new TypeError(
        `internal hook "${opts.name}": invalid event key "${key}" (expected "type" or "type:action")`,
      );
    }
    if (typeof handler !== "function") {
      throw new TypeError(`internal hook "${opts.name}": handler for "${key}" is not a function`);
    }
    const registration: Registration = { key, name: opts.name, handler: handler as StoredHandler, seq: this.seq++ };
    const list = this.byKey.get(key) ?? [];
    list.push(registration);
    this.byKey.set(key, list);
    return () => {
      const current = this.byKey.get(key);
      if (!current) return;
      const index = current.indexOf(registration);
      if (index !== -1) current.splice(index, 1);
      if (current.length === 0) this.byKey.delete(key);
    };
  }

  /** Lets a caller skip building an expensive context when nobody listens. */
  has(type: string, action?: string): boolean {
    return this.byKey.has(type) || (action !== undefined && this.byKey.has(`${type}:${action}`));
  }

  /**
   * Runs the handlers for `type` and `type:action` one after the other, in the order they were registered, so a
   * hook can rely on an earlier one's edits (e.g. of `bootstrapFiles`). A failing hook is logged and skipped:
   * a broken script must never stop a command or a gateway start. Returns the same event, with `messages` set.
   */
  async trigger<C extends object>(event: InternalHookEvent<C>): Promise<InternalHookEvent<C>> {
    if (!event.messages) event.messages = [];
    const general = this.byKey.get(event.type);
    const specific = event.action === undefined ? undefined : this.byKey.get(`${event.type}:${event.action}`);
    if (!general && !specific) return event;
    // Snapshot: a hook that unregisters itself (or another) while running must not shift the iteration.
    for (const registration of mergeBySeq(general, specific)) {
      try {
        await registration.handler(event);
      } catch (err) {
        const eventKey = event.action === undefined ? event.type : `${event.type}:${event.action}`;
        this.logger.warn(`internal hook "${registration.name}" failed on ${eventKey}: ${describeError(err)}`, {
          hook: registration.name,
          event: eventKey,
        });
      }
    }
    return event;
  }
}

function mergeBySeq(a: Registration[] | undefined, b: Registration[] | undefined): Registration[] {
  if (!a) return b ? [...b] : [];
  if (!b) return [...a];
  const out: Registration[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i].seq < b[j].seq)) out.push(a[i++]);
    else out.push(b[j++]);
  }
  return out;
}

export interface InternalHookLoadReport {
  loaded: Array<{ name: string; events: string[]; source: string }>;
  failed: Array<{ source: string; reason: string }>;
}

/** Handler file names tried in order; `.js` is ESM here because hook folders live in ESM workspaces. */
const HANDLER_FILES = ["handler.js", "handler.mjs", "index.js"];

/**
 * Loads every `<dir>/<name>/` that has a HOOK.md. Each folder is independent: a bad one is reported (warning
 * naming the folder) and the scan goes on. Directories that do not exist are skipped quietly, since the default
 * hook dirs are optional.
 */
export async function discoverInternalHooks(
  dirs: string[],
  registry: InternalHookRegistry,
  logger: HookLogger,
): Promise<InternalHookLoadReport> {
  const report: InternalHookLoadReport = { loaded: [], failed: [] };
  for (const dir of dirs) {
    let names: string[];
    try {
      const entries = await readdir(dir, { withFileTypes: true });
      names = entries
        .filter((e) => e.isDirectory() || e.isSymbolicLink())
        .map((e) => e.name)
        .sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
        logger.warn(`cannot read hook directory ${dir}: ${describeError(err)}`, { dir });
      }
      continue;
    }
    for (const name of names) {
      const folder = join(dir, name);
      const outcome = await loadHookFolder(folder, registry, logger);
      if ("reason" in outcome) {
        logger.warn(`hook folder ${folder} skipped: ${outcome.reason}`, { folder });
        report.failed.push({ source: folder, reason: outcome.reason });
      } else {
        report.loaded.push({ ...outcome, source: folder });
      }
    }
  }
  return report;
}

async function loadHookFolder(
  folder: string,
  registry: InternalHookRegistry,
  logger: HookLogger,
): Promise<{ name: string; events: string[] } | { reason: string }> {
  let text: string;
  try {
    text = await readFile(join(folder, "HOOK.md"), "utf8");
  } catch {
    return { reason: "no HOOK.md" };
  }
  const fm = parseFrontMatter(text);
  if (!fm.ok) return { reason: `HOOK.md: ${fm.error}` };
  const { data } = fm;
  if (data.name !== undefined && typeof data.name !== "string") return { reason: "HOOK.md: `name` must be a string" };
  const name = (data.name as string | undefined) || basename(folder);
  const events = data.events;
  if (!Array.isArray(events) || events.length === 0 || !events.every((e) => typeof e === "string")) {
    return { reason: 'HOOK.md: `events` must be a non-empty list of event keys (e.g. ["command:new"])' };
  }
  const badKey = events.find((e) => !isInternalHookKey(e));
  if (badKey !== undefined) return { reason: `HOOK.md: invalid event key "${badKey}"` };

  const file = await firstExisting(HANDLER_FILES.map((f) => join(folder, f)));
  if (!file) return { reason: `no handler module (looked for ${HANDLER_FILES.join(", ")})` };
  const loaded = await importHandler(file);
  if ("reason" in loaded) return loaded;

  warnUnknownEvents(name, events, logger);
  for (const key of events) registry.register(key, loaded.handler, { name });
  return { name, events };
}

/**
 * Config-declared hooks: `{ events, module }` where `module` is a path (relative to `baseDir`, default the
 * working directory). Same isolation as discovery: one broken entry is logged and the rest still register.
 */
export async function registerInternalHooksFromConfig(
  entries: Array<{ events: string[]; module: string; name?: string }>,
  registry: InternalHookRegistry,
  logger: HookLogger,
  opts: { baseDir?: string } = {},
): Promise<InternalHookLoadReport> {
  const report: InternalHookLoadReport = { loaded: [], failed: [] };
  for (const [index, entry] of entries.entries()) {
    const where = `hooks.internal.entries[${index}]`;
    const fail = (reason: string) => {
      logger.warn(`${where} skipped: ${reason}`, { entry: index });
      report.failed.push({ source: where, reason });
    };
    if (!isPlainObject(entry) || typeof entry.module !== "string" || entry.module === "") {
      fail("`module` must be a path to a handler module");
      continue;
    }
    const events = entry.events;
    if (!Array.isArray(events) || events.length === 0 || !events.every((e) => typeof e === "string")) {
      fail("`events` must be a non-empty list of event keys");
      continue;
    }
    const badKey = events.find((e) => !isInternalHookKey(e));
    if (badKey !== undefined) {
      fail(`invalid event key "${badKey}"`);
      continue;
    }
    const file = isAbsolute(entry.module) ? entry.module : resolve(opts.baseDir ?? process.cwd(), entry.module);
    const loaded = await importHandler(file);
    if ("reason" in loaded) {
      fail(loaded.reason);
      continue;
    }
    const name = entry.name ?? basename(file);
    warnUnknownEvents(name, events, logger);
    for (const key of events) registry.register(key, loaded.handler, { name });
    report.loaded.push({ name, events, source: file });
  }
  return report;
}

async function importHandler(file: string): Promise<{ handler: InternalHookHandler<object> } | { reason: string }> {
  let mod: Record<string, unknown>;
  try {
    mod = await import(pathToFileURL(file).href);
  } catch (err) {
    return { reason: `cannot import ${file}: ${describeError(err)}` };
  }
  const handler = typeof mod.default === "function" ? mod.default : mod.handler;
  if (typeof handler !== "function") {
    return { reason: `${file} exports no handler (default export or named "handler" function)` };
  }
  return { handler: handler as InternalHookHandler<object> };
}

// Unknown keys still register (a newer gateway may fire them), but a typo would otherwise never fire silently.
function warnUnknownEvents(name: string, events: string[], logger: HookLogger) {
  const known: readonly string[] = INTERNAL_HOOK_EVENTS;
  const types = new Set(known.map((k) => k.split(":")[0]));
  for (const key of events) {
    if (!known.includes(key) && !types.has(key)) {
      logger.warn(`internal hook "${name}" listens to unknown event "${key}"`, { hook: name, event: key });
    }
  }
}

async function firstExisting(paths: string[]): Promise<string | undefined> {
  for (const p of paths) {
    try {
      await access(p);
      return p;
    } catch {
      // try the next candidate
    }
  }
  return undefined;
}
