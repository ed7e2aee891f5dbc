// Where a turn's Postgres transactions come from: one gateway node on a fresh schema (the bench's workload: the
// noop tool, one tool call per turn), every statement any connection of this process sends recorded, grouped into
// transactions (BEGIN … COMMIT on one connection, else one statement), and the transactions of `turns` sequential
// turns on one session listed, after `warmup` unmeasured turns. Options: { url, baseUrl, turns, warmup, list, pgss }.
// `pgss: true` (a server with pg_stat_statements loaded and created, e.g. a private instance: it is reset here) also
// prints the server's own per-statement figures over the measured turns: calls, execution and planning time, rows
// and shared blocks per turn, the tables' sequential scans, and the server processes' CPU by backend type.
// Prints {transactions, writes, reads, perTurn, list?}. Writes are transactions with an INSERT/UPDATE/DELETE or a
// pg_notify in them: only those wait for a WAL flush; a lone SELECT commits too (pg_stat_database counts it).
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { GatewayClient } from "../../dist/client/index.js";
import { parseConfig } from "../../dist/config/index.js";
import { startGateway } from "../../dist/gateway/index.js";
import { createLogger } from "../../dist/infra/logger.js";
import { composeNode } from "../../dist/node/compose.js";
import { startFakeModelServer } from "../../dist/testing/fake-model-server.js";
import { childOptions, emitResult } from "../lib/child.mjs";
import { benchConfig, benchRespond, FINAL_TEXT, noopTool } from "../lib/model.mjs";

const opts = childOptions();
// the model in this process is fine here: statements are counted, not time
const model = opts.baseUrl ? undefined : await startFakeModelServer({ respond: benchRespond, captureRequests: false });
opts.baseUrl ??= model.baseUrl;
const schema = `lg_stmts_${randomBytes(4).toString("hex")}`;
const admin = new pg.Client({ connectionString: opts.url });
await admin.connect();
await admin.query(`CREATE SCHEMA ${schema}`);

const log = [];
let recording = false;
const open = new WeakMap(); // client → its transaction's statements while BEGIN … COMMIT
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (config, ...rest) {
  let text = (typeof config === "string" ? config : (config?.text ?? "")).replace(/\s+/g, " ").trim();
  // a notification's payload says what it is ({k: "sm"}: a session message, "end": a run's end, …)
  if (/^SELECT pg_notify/i.test(text))
    text += ` ${String((Array.isArray(rest[0]) ? rest[0] : config.values)?.[1]).slice(0, 9)}`;
  if (recording && !/^LISTEN|^UNLISTEN/i.test(text)) {
    if (/^BEGIN/i.test(text)) open.set(this, []);
    else if (/^(COMMIT|ROLLBACK)/i.test(text)) {
      log.push({ statements: open.get(this) ?? [], end: text });
      open.delete(this);
    } else if (open.has(this)) open.get(this).push(text);
    else log.push({ statements: [text], end: "autocommit" });
  }
  return query.call(this, config, ...rest);
};

const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-pg-stmts-"));
const config = benchConfig(opts.baseUrl);
config.storage = { backend: "postgres", postgres: { url: opts.url, schema } };
const node = await composeNode({
  role: "gateway",
  config: parseConfig(config),
  stateDir,
  logger: createLogger({ level: "error" }),
  tools: [noopTool],
});
const gateway = await startGateway({ node, port: 0, host: "127.0.0.1" });
const client = await GatewayClient.connect({ url: gateway.url, scopes: ["operator.write"] });
let n = 0;
const turn = async (sessionKey) => {
  const final = await client.agent({ message: "hello", idempotencyKey: `st-${schema}-${n++}`, sessionKey });
  if (final.result?.payloads?.[0]?.text !== FINAL_TEXT) throw new Error(`turn failed: ${JSON.stringify(final)}`);
};
const session = `stmts-${schema}`;
for (let i = 0; i < (opts.warmup ?? 3); i++) await turn(session);
// the run-event writer and the ledgers flush behind the final: let them land before and after the measured turns
const settle = () => new Promise((r) => setTimeout(r, 400));
await settle();
const procCpu = async () => {
  // every process of the server (a private instance: nothing else runs on it), by backend type, in clock ticks
  const { rows } = await admin.query("SELECT pid, backend_type, datname FROM pg_stat_activity");
  const out = {};
  for (const r of rows) {
    try {
      const f = fs.readFileSync(`/proc/${r.pid}/stat`, "utf8").split(") ")[1].split(" ");
      const k = r.datname && r.backend_type === "client backend" ? "client backend" : r.backend_type;
      out[k] = (out[k] ?? 0) + Number(f[11]) + Number(f[12]);
    } catch {}
  }
  return out;
};
let cpuBefore;
if (opts.pgss) {
  await admin.query("SELECT pg_stat_statements_reset()");
  await admin.query("SELECT pg_stat_reset()");
  cpuBefore = await procCpu();
}
recording = true;
const turns = opts.turns ?? 10;
for (let i = 0; i < turns; i++) await turn(session);
await settle();
recording = false;
let pgss;
if (opts.pgss) {
  const cpuAfter = await procCpu();
  const tick = 1000 / 100; // USER_HZ
  const r = (x) => Math.round(x * 1000) / 1000;
  const { rows } = await admin.query(
    `SELECT query, calls, total_exec_time, total_plan_time, plans, rows, shared_blks_hit, shared_blks_read,
       shared_blks_dirtied, wal_records, wal_bytes
     FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat%' ORDER BY total_exec_time + total_plan_time DESC`,
  );
  await new Promise((res) => setTimeout(res, 600)); // table counters are sent at the backends' next idle moment
  const tables = await admin.query(
    `SELECT relname, seq_scan, seq_tup_read, idx_scan, n_tup_ins, n_tup_upd, n_tup_del, n_tup_hot_upd
     FROM pg_stat_user_tables WHERE schemaname = $1 ORDER BY seq_tup_read DESC`,
    [schema],
  );
  pgss = {
    cpuMsPerTurnByBackendType: Object.fromEntries(
      Object.entries(cpuAfter).map(([k, v]) => [k, r(((v - (cpuBefore[k] ?? 0)) * tick) / turns)]),
    ),
    statements: rows.map((x) => ({
      perTurn: r(Number(x.calls) / turns),
      execMsPerTurn: r(x.total_exec_time / turns),
      planMsPerTurn: r(x.total_plan_time / turns),
      execUsPerCall: r((x.total_exec_time * 1000) / Number(x.calls)),
      plans: Number(x.plans),
      rowsPerCall: r(Number(x.rows) / Number(x.calls)),
      blksPerCall: r((Number(x.shared_blks_hit) + Number(x.shared_blks_read)) / Number(x.calls)),
      walBytesPerCall: r(Number(x.wal_bytes) / Number(x.calls)),
      query: x.query.replace(/\s+/g, " ").slice(0, 160),
    })),
    tables: tables.rows,
  };
}

const isWrite = (t) => t.statements.some((s) => /\b(INSERT|UPDATE|DELETE)\b|pg_notify/i.test(s));
const kind = (t) => {
  const s = t.statements.find((x) => !/^(SELECT (1|pg_advisory))/i.test(x)) ?? t.statements[0] ?? "";
  return `${t.end === "autocommit" ? "" : `tx(${t.statements.length}): `}${s.slice(0, 110)}`;
};
const groups = new Map();
for (const t of log) {
  const k = `${isWrite(t) ? "W" : "R"} ${kind(t)}`;
  groups.set(k, (groups.get(k) ?? 0) + 1);
}
const writes = log.filter(isWrite).length;
emitResult({
  turns,
  transactions: log.length / turns,
  writes: writes / turns,
  reads: (log.length - writes) / turns,
  perTurn: [...groups]
    .map(([k, c]) => `${(c / turns).toFixed(2)}  ${k}`)
    .sort((a, b) => a.slice(6).localeCompare(b.slice(6))),
  ...(opts.list ? { list: log.slice(0, opts.list) } : {}),
  ...(pgss ? { pgss } : {}),
});
await client.close();
await gateway.close("done");
await node.close();
await admin.query(`DROP SCHEMA ${schema} CASCADE`);
await admin.end();
await model?.close();
fs.rmSync(stateDir, { recursive: true, force: true });
process.exit(0);
