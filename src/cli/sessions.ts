import { loadConfig } from "../config/index.js";
import { createStore } from "../node/backend.js";
import { contentWithImageNotes } from "../providers/types.js";
import { normalizeSessionKey } from "../session/keys.js";
import { describeStorage } from "../storage/describe-storage.js";
import type { SessionRecord, TranscriptRow } from "../storage/types.js";
import { redactTranscriptRow } from "../tools/redact-transcript.js";
import { CliError } from "./exit-codes.js";
import { formatLocalTime } from "./local-time.js";

export const DEFAULT_LIST_LIMIT = 100;

function parseLimit(raw: string | undefined, fallback: number | undefined): number | undefined {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n <= 0) {
    throw new CliError(`--limit: expected a positive whole number, got "${raw}"`);
  }
  return n;
}

/** A session as JSON output: fields the store keeps as JSON text become the objects they encode. */
export function sessionForJson(s: SessionRecord): Record<string, unknown> {
  const { skillsSnapshot, ...rest } = s;
  if (skillsSnapshot === undefined) return rest;
  try {
    return { ...rest, skillsSnapshot: JSON.parse(skillsSnapshot) as unknown };
  } catch {
    // a damaged snapshot is shown as it is stored rather than failing the whole listing
    return { ...rest, skillsSnapshot };
  }
}

export function describeRow(row: TranscriptRow): string {
  if (row.kind !== "message" || !row.message) return `#${row.seq} [${row.kind}] ${row.text ?? ""}`;
  const m = row.message;
  if (m.role === "user") return `#${row.seq} user: ${contentWithImageNotes(m.content)}`;
  if (m.role === "toolResult") {
    const first = contentWithImageNotes(m.content).split("\n")[0] ?? "";
    return `#${row.seq} tool ${m.toolName}${m.isError ? " (error)" : ""}: ${first.slice(0, 120)}`;
  }
  const parts = m.content.map((b) =>
    b.type === "text"
      ? b.text
      : b.type === "toolCall"
        ? `[calls ${b.name} ${JSON.stringify(b.arguments)}]`
        : "[thinking]",
  );
  return `#${row.seq} assistant: ${parts.join(" ")}`;
}

export async function sessionsList(opts: { config?: string; json?: boolean; limit?: string }): Promise<number> {
  const limit = parseLimit(opts.limit, DEFAULT_LIST_LIMIT);
  const { config, stateDir } = loadConfig({ configPath: opts.config });
  const store = await createStore(config, stateDir);
  try {
    const sessions = await store.listSessions({ limit });
    if (opts.json) {
      process.stdout.write(`${JSON.stringify(sessions.map(sessionForJson), null, 2)}\n`);
      return 0;
    }
    if (sessions.length === 0) {
      process.stdout.write(`no sessions yet (storage: ${describeStorage(config, stateDir)})\n`);
      return 0;
    }
    for (const s of sessions) {
      process.stdout.write(
        `${s.key}  updated ${formatLocalTime(s.updatedAt)}  tokens ${s.totalTokens}  generation ${s.generation}\n`,
      );
    }
    const total = await store.countSessions();
    if (total > sessions.length) {
      process.stderr.write(`(showing the ${sessions.length} most recent of ${total}; see --limit)\n`);
    }
    return 0;
  } finally {
    await store.close();
  }
}

export async function sessionsShow(
  key: string,
  opts: { config?: string; json?: boolean; limit?: string },
): Promise<number> {
  const { config, stateDir } = loadConfig({ configPath: opts.config });
  const store = await createStore(config, stateDir);
  try {
    const normalized = normalizeSessionKey(key).key;
    const s = await store.getSession(normalized);
    if (!s) throw new CliError(`no session "${normalized}" (see: loopgate sessions list)`, 1);
    const limit = parseLimit(opts.limit, undefined);
    const rows = (await store.readTranscript(normalized, { limit })).map(redactTranscriptRow);
    if (opts.json) {
      process.stdout.write(`${JSON.stringify({ session: sessionForJson(s), transcript: rows }, null, 2)}\n`);
      return 0;
    }
    process.stdout.write(
      `${s.key}  (id ${s.sessionId}, agent ${s.agentId}, generation ${s.generation}, tokens ${s.totalTokens})\n`,
    );
    for (const row of rows) process.stdout.write(`${describeRow(row)}\n`);
    return 0;
  } finally {
    await store.close();
  }
}
