// What Postgres itself costs per statement and per commit, whatever Loopgate sends: one connection with the node's
// driver, `n` times each of a trivial read (one parameter), a one-row INSERT committed on its own, and BEGIN + the
// same INSERT + COMMIT; the server backend's CPU (from /proc: the server must run on this machine) and this
// process's CPU per call. Against a turn's statement and commit counts (postgres-turn-statements.mjs) this is the
// floor a turn on Postgres cannot go below. Options: { url, n }. Prints { perCall: { <case>: { serverUs, nodeUs } } }.
import fs from "node:fs";
import pg from "pg";
import { childOptions, emitResult } from "../lib/child.mjs";

const opts = childOptions();
const n = opts.n ?? 2000;
const c = new pg.Client({ connectionString: opts.url });
await c.connect();
const pid = (await c.query("SELECT pg_backend_pid() AS pid")).rows[0].pid;
await c.query("CREATE TEMP TABLE floor_rows (id bigint, v text)");
const ticks = () => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return Number(f[11]) + Number(f[12]);
};
const cases = {
  "SELECT $1 (named)": () => c.query({ name: "s", text: "SELECT $1::int AS x", values: [1] }),
  "SELECT $1 (unnamed)": () => c.query("SELECT $1::int AS x", [1]),
  "INSERT, own commit": (i) => c.query({ name: "i", text: "INSERT INTO floor_rows VALUES ($1, $2)", values: [i, "x"] }),
  "BEGIN; INSERT; COMMIT": async (i) => {
    await c.query("BEGIN");
    await c.query({ name: "i", text: "INSERT INTO floor_rows VALUES ($1, $2)", values: [i, "x"] });
    await c.query("COMMIT");
  },
};
const perCall = {};
for (const [name, run] of Object.entries(cases)) {
  for (let i = 0; i < 100; i++) await run(i); // warm: the named statements prepared, the code paths hot
  const t0 = ticks();
  const u0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await run(i);
  const u = process.cpuUsage(u0);
  perCall[name] = {
    serverUs: Math.round(((ticks() - t0) * 10_000) / n), // USER_HZ 100: a tick is 10 ms
    nodeUs: Math.round((u.user + u.system) / n),
  };
}
await c.end();
emitResult({ n, perCall });
