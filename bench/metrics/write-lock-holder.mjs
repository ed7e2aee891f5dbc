// Helper for write-lock.mjs: holds the lock at argv[2] for argv[3] ms, then releases it and prints when.
import { acquireSessionWriteLock } from "../../dist/session/write-lock.js";
import { wallMs } from "../lib/stats.mjs";

const [lockPath, holdMs] = process.argv.slice(2);
const handle = await acquireSessionWriteLock(lockPath, { acquireTimeoutMs: 10_000 });
process.stdout.write("held\n");
await new Promise((r) => setTimeout(r, Number(holdMs)));
await handle.release();
process.stdout.write(`released ${wallMs()}\n`);
