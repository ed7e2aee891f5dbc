import fs from "node:fs";
import { describeAgents } from "../config/agents.js";
import { ConfigError } from "../config/errors.js";
import { loadConfig } from "../config/load.js";
import { locateConfigFile } from "../config/source.js";
import { EXIT } from "./exit-codes.js";

/** `loopgate config validate` / `loopgate config path`: what a run would load, checked without running anything. */

interface ConfigCliOptions {
  config?: string;
  json?: boolean;
}

/** "a.b[0].c: message" → { path, message }; a problem about the whole file has the path "(file)". */
export function splitProblem(problem: string): { path: string; message: string } {
  const m = /^([^\s:]+): ([\s\S]*)$/.exec(problem);
  return m ? { path: m[1], message: m[2] } : { path: "(file)", message: problem };
}

export function runConfigValidate(opts: ConfigCliOptions): number {
  const where = locateConfigFile({ configPath: opts.config });
  const exists = fs.existsSync(where.file);
  let problems: string[] = [];
  let agents: string | undefined;
  let warning: string | undefined;
  try {
    // --json carries the "not supported by Loopgate" warning in the report; text mode says it on stderr
    const loaded = loadConfig({ configPath: opts.config, ...(opts.json ? { onWarning: () => {} } : {}) });
    agents = describeAgents(loaded.config);
    warning = loaded.warning;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems = err.problems;
  }
  const ok = problems.length === 0;
  if (opts.json) {
    const report = {
      ok,
      file: where.file,
      exists,
      problems: problems.map(splitProblem),
      ...(warning ? { warning } : {}),
    };
    process.stdout.write(`${JSON.stringify(report)}\n`);
  } else if (!ok) {
    process.stderr.write(`loopgate: invalid config ${where.file}:\n${problems.map((p) => `  - ${p}`).join("\n")}\n`);
  } else {
    const what = exists ? `config OK: ${where.file}` : `config OK: no file at ${where.file}; defaults apply`;
    process.stdout.write(`${what}\nagents: ${agents}\n`);
  }
  return ok ? EXIT.ok : EXIT.usage;
}

export function runConfigPath(opts: ConfigCliOptions): number {
  const where = locateConfigFile({ configPath: opts.config });
  const exists = fs.existsSync(where.file);
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ file: where.file, exists, from: where.from })}\n`);
    return EXIT.ok;
  }
  const state = exists ? "exists" : where.explicit ? "does not exist" : "does not exist; defaults apply";
  process.stdout.write(`${where.file}\n`);
  process.stderr.write(`(${state}; from ${where.from})\n`);
  return EXIT.ok;
}
