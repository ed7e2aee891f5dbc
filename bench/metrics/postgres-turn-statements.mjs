// Where a turn's Postgres transactions come from: one gateway node on a fresh schema (the bench's workload: the
// noop tool, one tool call per turn), every statement any connection of this process sends recorded, grouped into
// transactions (BEGIN … COMMIT on one connection, else one statement), and the transactions of `turns` sequential
// turns on one session listed, after `warmup` unmeasured turns. Options: { url, baseUrl, turns, warmup, list }.
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
recording = true;
const turns = opts.turns ?? 10;
for (let i = 0; i < turns; i++) await turn(session);
await settle();
recording = false;

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
});
await client.close();
await gateway.close("done");
await node.close();
await admin.query(`DROP SCHEMA ${schema} CASCADE`);
await admin.end();
await model?.close();
fs.rmSync(stateDir, { recursive: true, force: true });
process.exit(0);
