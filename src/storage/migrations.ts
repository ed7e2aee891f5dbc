/** Versioned, forward-only migrations. Each entry runs once, in order, inside a transaction. */
export const migrations: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  {
    version: 1,
    name: "sessions, transcript, runs",
    sql: `
      CREATE TABLE sessions (
        key TEXT PRIMARY KEY,
        session_id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        generation INTEGER NOT NULL DEFAULT 1,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        label TEXT,
        model_override TEXT,
        thinking TEXT,
        queue_mode TEXT,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        total_tokens INTEGER NOT NULL DEFAULT 0,
        compaction_count INTEGER NOT NULL DEFAULT 0,
        skills_snapshot TEXT
      );
      CREATE TABLE transcript (
        session_key TEXT NOT NULL,
        generation INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        run_id TEXT,
        created_at INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (session_key, generation, seq)
      ) WITHOUT ROWID;
      CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        session_key TEXT NOT NULL,
        status TEXT NOT NULL,
        accepted_at INTEGER NOT NULL,
        started_at INTEGER,
        ended_at INTEGER,
        stop_reason TEXT,
        error TEXT,
        params TEXT NOT NULL,
        result TEXT,
        receipt TEXT
      );
      CREATE INDEX runs_status ON runs (status, accepted_at);
      CREATE INDEX runs_session ON runs (session_key, accepted_at);
    `,
  },
  {
    version: 2,
    name: "image blobs",
    // An image in a transcript row is stored here once per session, keyed by the sha256 of its bytes; the row's
    // JSON keeps only the reference. Per session (not global), so deleting a session deletes its blobs with no
    // reference counting. A rowid table: blobs run to megabytes, which a WITHOUT ROWID b-tree handles badly.
    sql: `
      CREATE TABLE blobs (
        session_key TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        mime_type TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        data BLOB NOT NULL,
        UNIQUE (session_key, sha256)
      );
    `,
  },
  {
    version: 3,
    name: "audit ledger",
    // The audit ledger (SPEC 11/20): metadata only, never content. `seq` is the ledger's own order (AUTOINCREMENT,
    // so a pruned seq is never handed out again and a cursor stays meaningful); `source_seq` is the run event's seq.
    // The indexes serve audit.list's filters, each newest first, and the age prune (ts).
    sql: `
      CREATE TABLE audit_events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        ts INTEGER NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        status TEXT NOT NULL,
        code TEXT,
        session_key TEXT NOT NULL,
        run_id TEXT NOT NULL,
        source_seq INTEGER NOT NULL,
        tool_name TEXT,
        tool_call_fp TEXT,
        schema_version INTEGER NOT NULL,
        redaction TEXT NOT NULL
      );
      CREATE INDEX audit_events_session ON audit_events (session_key, seq);
      CREATE INDEX audit_events_run ON audit_events (run_id, seq);
      CREATE INDEX audit_events_actor ON audit_events (actor, seq);
      CREATE INDEX audit_events_ts ON audit_events (ts);
    `,
  },
  {
    version: 4,
    name: "cron jobs and runs",
    // Only jobs added by RPC are stored (config jobs come from the config at each start). A run row is written when
    // the job is due, ended when its run ends; scheduled_at is what catch-up after a restart reads.
    sql: `
      CREATE TABLE cron_jobs (
        id TEXT PRIMARY KEY,
        spec TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE TABLE cron_runs (
        id INTEGER PRIMARY KEY,
        job_id TEXT NOT NULL,
        scheduled_at INTEGER NOT NULL,
        started_at INTEGER,
        ended_at INTEGER,
        run_id TEXT,
        status TEXT NOT NULL,
        error_kind TEXT
      );
      CREATE INDEX cron_runs_job ON cron_runs (job_id, scheduled_at);
      CREATE INDEX cron_runs_status ON cron_runs (status);
    `,
  },
  {
    version: 5,
    name: "run events",
    // Every agent event of a run, with its run seq, so a client can re-attach and replay from a seq (SPEC 15).
    // `event` is the event's wire JSON as the gateway sent it, so a replay sends exactly what live clients got and
    // nothing is serialized twice. A rowid table with a unique (run_id, seq) index rather than WITHOUT ROWID: rows
    // are appended in time order while run ids are random, so only the small index entries land all over the tree;
    // measured ~35% cheaper per inserted event than WITHOUT ROWID with the whole row in the key's b-tree.
    // (Versions 3 and 4 are other branches'.)
    sql: `
      CREATE TABLE run_events (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        ts INTEGER NOT NULL,
        session_key TEXT NOT NULL,
        stream TEXT NOT NULL,
        event TEXT NOT NULL,
        UNIQUE (run_id, seq)
      );
    `,
  },
  {
    version: 6,
    name: "session verbose level",
    // sessions.patch sets it beside model, thinking and queue mode; the session's next runs read it
    sql: `
      ALTER TABLE sessions ADD COLUMN verbose_level TEXT;
    `,
  },
  {
    version: 7,
    name: "session reasoning level",
    // sessions.patch reasoningLevel: what the session's runs show of the model's reasoning (off, on, stream)
    sql: `
      ALTER TABLE sessions ADD COLUMN reasoning_level TEXT;
    `,
  },
  {
    version: 8,
    name: "auth profile health and session pins",
    // SPEC 23: one row per (profile, model) a rate limit cooled, and one per profile (model '') for billing and auth
    // failures and the last use; every node reads the same rows. The session keeps its pinned profile and the user's
    // pin (sessions.patch authProfile).
    sql: `
      CREATE TABLE auth_health (
        profile_id TEXT NOT NULL,
        model TEXT NOT NULL,
        until INTEGER,
        reason TEXT,
        error_count INTEGER NOT NULL DEFAULT 0,
        last_failure_at INTEGER,
        last_used INTEGER,
        PRIMARY KEY (profile_id, model)
      );
      ALTER TABLE sessions ADD COLUMN auth_profile TEXT;
      ALTER TABLE sessions ADD COLUMN auth_profile_override TEXT;
    `,
  },
  {
    version: 9,
    name: "cost ledger",
    // One row per model call (limits/cost-ledger.ts): budgets sum a window of it, usage.summary groups it. cost_usd
    // is NULL for a model without a price (tokens only). seq is the ledger's own order, for paging and the count prune.
    sql: `
      CREATE TABLE cost_ledger (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        ts INTEGER NOT NULL,
        run_id TEXT NOT NULL,
        session_key TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        token TEXT,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        auth_profile TEXT,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cache_read_tokens INTEGER NOT NULL,
        cache_write_tokens INTEGER NOT NULL,
        total_tokens INTEGER NOT NULL,
        cost_usd REAL
      );
      CREATE INDEX cost_ledger_ts ON cost_ledger (ts);
      CREATE INDEX cost_ledger_agent ON cost_ledger (agent_id, ts);
      CREATE INDEX cost_ledger_session ON cost_ledger (session_key, ts);
      CREATE INDEX cost_ledger_token ON cost_ledger (token, ts);
    `,
  },
  {
    version: 10,
    name: "operator settings",
    // What operators switch at run time and every node must see (issue 33): exec allow-always answers and allowlist
    // patterns, skill and plugin switches; one row per setting under a dotted key, the value JSON.
    sql: `
      CREATE TABLE operator_settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at INTEGER NOT NULL
      );
    `,
  },
];

type Migration = (typeof migrations)[number];

/**
 * The migrations a database at `current` still needs, in version order. Version numbers are reserved per change, so
 * the list may have gaps and, after branches are merged, need not be in order in the file: order comes from the
 * numbers, never from the position. Two entries with one number are a merge mistake and refused.
 */
export function pendingMigrations(list: ReadonlyArray<Migration>, current: number): Migration[] {
  const seen = new Set<number>();
  for (const m of list) {
    if (seen.has(m.version)) throw new Error(`migrations: version ${m.version} is defined twice`);
    seen.add(m.version);
  }
  return list.filter((m) => m.version > current).sort((a, b) => a.version - b.version);
}
