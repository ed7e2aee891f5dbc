import { readFileSync } from "node:fs";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { flushTracing } from "../infra/tracing-gate.js";
import { CliError, EXIT } from "./exit-codes.js";
import { exitQuietlyWhenStdoutCloses } from "./stdout-closed.js";

exitQuietlyWhenStdoutCloses();

// Heavy modules (store, providers, gateway) are imported inside each action, so `--help` and `--version` start fast.

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

function reportAndExit(err: unknown): never {
  const e = err as Error & { exitCode?: number; problems?: string[]; code?: string };
  const name = e?.name;
  let code: number = EXIT.runError;
  if (err instanceof CliError) code = err.exitCode;
  else if (
    name === "ConfigError" ||
    name === "SessionKeyError" ||
    name === "RunParamError" ||
    name === "ModelResolutionError"
  ) {
    code = EXIT.usage;
  }
  process.stderr.write(`loopgate: ${e?.message ?? String(err)}\n`);
  process.exit(code);
}

async function run(action: () => Promise<number> | number): Promise<void> {
  try {
    const code = await action();
    process.exitCode = code;
    // a tracing SDK the user preloaded exports in batches: what it still holds goes out before the exit
    await flushTracing();
    // A command is done when its action returns (the gateway's returns after it has shut down). Exit now rather
    // than when the last idle keep-alive socket or timer lets go: that wait was ~150 ms of every one-shot run.
    // Both streams are flushed first, so piped output is never cut short.
    await new Promise<void>((resolve) => process.stdout.write("", () => resolve()));
    await new Promise<void>((resolve) => process.stderr.write("", () => resolve()));
    process.exit(code);
  } catch (err) {
    reportAndExit(err);
  }
}

const program = new Command();
program
  .name("loopgate")
  .description("Agent gateway and agent-loop runtime (OpenClaw gateway protocol compatible)")
  .version(version(), "-V, --version")
  .addOption(new Option("-v", "output the version number").hideHelp())
  // commander takes one short flag for the version; -v (the old flag) is kept as a hidden alias of -V
  .on("option:v", () => {
    process.stdout.write(`${version()}\n`);
    throw new CommanderError(0, "commander.version", version());
  })
  .exitOverride();

program
  .command("agent")
  .description("send a message and run one agent turn (through the gateway, or embedded with --local)")
  .option(
    "-m, --message <text>",
    "the message to send; - reads it from stdin (once: a second -m is an error)",
    (text: string, given: string[] = []) => [...given, text],
  )
  .option("--message-file <path>", "send this file's text as the message (instead of -m)")
  .option(
    "--attach <file>",
    "attach a file (repeatable): PNG/JPEG/GIF/WebP images go to the model as images, text files inline",
    (file: string, files: string[] = []) => [...files, file],
  )
  .option(
    "--local",
    "run embedded in this process instead of through a running gateway (exec may run any command unless tools.exec.security says otherwise; approvals are asked on this terminal)",
  )
  .option("-s, --session-key <key>", "session key (default agent:<agent>:main)")
  .option("--agent <id>", "agent id (default: the agents.list default, else main)")
  .option("--model <provider/model>", "model to use for this run")
  .option("--thinking <level>", "thinking level: off, minimal, low, medium, high, xhigh, adaptive")
  .option("--reasoning <level>", "show the model's reasoning: off, on (a block before the answer), stream (live)")
  .option(
    "--verbose [level]",
    "tool detail: off and on print one summarized line per tool call here (on also adds the summaries to the reply's payloads, see --json; the default of a bare --verbose); full prints each call's whole arguments and result too",
  )
  .option("--timeout <seconds>", "run timeout in seconds (0 = unlimited)")
  .option(
    "--block-streaming <on|off>",
    "send the reply as blocks of 800-1200 chars (default agents.defaults.blockStreamingDefault)",
  )
  .option(
    "--auth-profile <provider:name>",
    "use this auth profile's key for this run while it is usable (auth.profiles; else the session's and the order's)",
  )
  .option("--json", "print one JSON object per event (newline-delimited), then the result")
  .option("--no-color", "no colour (also NO_COLOR; FORCE_COLOR forces it)")
  .option("--config <path>", "config file (default $LOOPGATE_STATE_DIR/loopgate.json5)")
  .option("--url <ws-url>", "gateway URL (default LOOPGATE_GATEWAY_URL or ws://127.0.0.1:<gateway.port>)")
  .option("--token <token>", "gateway token (default LOOPGATE_GATEWAY_TOKEN or gateway.auth.token)")
  .addHelpText("after", "\nExit codes: 0 ok, 1 run error, 2 usage/config error, 124 timeout, 130 interrupted.")
  .action((opts) =>
    run(async () => {
      opts.message = await (await import("./message-input.js")).readMessage(opts);
      if (opts.local) return (await import("./agent.js")).runAgentLocal(opts);
      return (await import("./agent-remote.js")).runAgentRemote(opts);
    }),
  );

// `loopgate agent` (the one-shot turn of issue 34) is parsed with the agent command alone: building the other
// commands and their options cost every such start a few ms of CPU (bench/README.md). Its help, errors and hints
// name none of its siblings, so they read the same; any other first argument (another command, help, -V, a typo
// commander suggests a command for) gets them all.
if (process.argv[2] !== "agent") addOtherCommands();

function addOtherCommands(): void {
  const sessions = program.command("sessions").description("list, show, reset and delete sessions");
  sessions
    .command("list", { isDefault: true })
    .description("list sessions, most recently updated first (the default)")
    .option("--json", "print JSON")
    .option("--limit <n>", "at most n sessions", "100")
    .option("--config <path>", "config file")
    .action((opts) => run(async () => (await import("./sessions.js")).sessionsList(opts)));
  sessions
    .command("show <key>")
    .description("show a session and its current transcript")
    .option("--json", "print JSON")
    .option("--limit <n>", "only the newest n rows")
    .option("--config <path>", "config file")
    .action((key, opts) => run(async () => (await import("./sessions.js")).sessionsShow(key, opts)));
  for (const action of ["reset", "delete"] as const) {
    sessions
      .command(`${action} <key>`)
      .description(
        action === "reset"
          ? "start a new transcript for a session (the old rows are kept), as /reset does (needs operator.admin)"
          : "delete a session, its transcript and its runs' events (needs operator.admin)",
      )
      .option("--local", "change the state dir directly instead of asking the running gateway")
      .option("--url <ws-url>", "gateway URL (default LOOPGATE_GATEWAY_URL or ws://127.0.0.1:<gateway.port>)")
      .option("--token <token>", "gateway token (default LOOPGATE_GATEWAY_TOKEN or gateway.auth.token)")
      .option("--config <path>", "config file")
      .action((key, opts) =>
        run(async () => (await import("./sessions-manage.js")).runSessionsManage(action, key, opts)),
      );
  }

  for (const kind of ["skill", "plugin"] as const) {
    const group = program
      .command(`${kind}s`)
      .description(
        `install, list and remove ${kind}s (installs are policy-checked: security.installPolicy, before_install hooks)`,
      );
    group
      .command("install <source>")
      .description(`install a ${kind} from a directory or an npm spec`)
      .option("--update", `replace an installed ${kind} of the same name`)
      .option("--agent <id>", "for skills: the agent whose workspace receives it (default: the default agent)")
      .option("--config <path>", "config file")
      .action((source, opts) => run(async () => (await import("./install.js")).runInstall(kind, source, opts)));
    group
      .command("list")
      .description(
        kind === "skill"
          ? "installed skills of an agent's workspace: name and path"
          : "installed plugins (<state dir>/plugins): name, path, and whether plugins.entries disables it",
      )
      .option("--agent <id>", "for skills: whose workspace (default: the default agent)")
      .option("--json", "print as JSON")
      .option("--config <path>", "config file")
      .action((opts) => run(async () => (await import("./installed.js")).runInstalledList(kind, opts)));
    group
      .command("remove <name>")
      .description(`delete an installed ${kind} (the config is not changed)`)
      .option("--agent <id>", "for skills: whose workspace (default: the default agent)")
      .option("--config <path>", "config file")
      .action((name, opts) => run(async () => (await import("./installed.js")).runInstalledRemove(kind, name, opts)));
  }

  program
    .command("demo")
    .description("offline demo: a scripted model calls a tool and streams a reply (no network, no API key)")
    .option("--json", "print one JSON object per event")
    .option("--no-color", "no colour")
    .action((opts) => run(async () => (await import("./demo.js")).runDemo(opts)));

  const config = program.command("config").description("check the config file");
  config
    .command("validate")
    .description("load and check the config as a run would (exit 0 ok, 2 with every problem)")
    .option("--json", "print {ok, file, exists, problems: [{path, message}]}")
    .option("--config <path>", "config file")
    .action((opts) => run(async () => (await import("./config.js")).runConfigValidate(opts)));
  config
    .command("path")
    .description(
      "print the config file a run would use (--config, LOOPGATE_CONFIG_PATH, LOOPGATE_CONFIG, $LOOPGATE_STATE_DIR) and whether it exists",
    )
    .option("--json", "print {file, exists, from}")
    .option("--config <path>", "config file")
    .action((opts) => run(async () => (await import("./config.js")).runConfigPath(opts)));

  program
    .command("health")
    .description("ask a running gateway how it is")
    .option("--url <ws-url>", "gateway URL (default LOOPGATE_GATEWAY_URL or ws://127.0.0.1:<gateway.port>)")
    .option("--token <token>", "gateway token (default LOOPGATE_GATEWAY_TOKEN or gateway.auth.token)")
    .option("--json", "print the gateway's answer as JSON")
    .option("--no-color", "no colour")
    .option("--config <path>", "config file")
    .action((opts) => run(async () => (await import("./health.js")).runHealth(opts)));

  const gatewayOpts = (cmd: Command) =>
    cmd
      .option("--url <ws-url>", "gateway URL (default LOOPGATE_GATEWAY_URL or ws://127.0.0.1:<gateway.port>)")
      .option("--token <token>", "gateway token (default LOOPGATE_GATEWAY_TOKEN or gateway.auth.token)")
      .option("--config <path>", "config file");
  const mcp = program.command("mcp").description("MCP servers as tool sources (mcp.servers)");
  gatewayOpts(
    mcp
      .command("list", { isDefault: true })
      .description("each MCP server's transport, state, tool count, last error and last success (asks the gateway)")
      .option("--json", "print as JSON")
      .option("--local", "start the configured servers here instead, wait for them to settle, print, and stop them"),
  ).action((opts) => run(async () => (await import("./mcp.js")).runMcpList(opts)));
  const models = program.command("models").description("models and their auth profiles (keys) on a running gateway");
  gatewayOpts(
    models
      .command("status", { isDefault: true })
      .description("each auth profile's state (ok, cooldown, disabled), until when, why, and its last use; never a key")
      .option("--json", "print the gateway's answer as JSON"),
  ).action((opts) => run(async () => (await import("./models.js")).runModelsStatus(opts)));
  const modelsAuth = models.command("auth").description("auth profiles (auth.profiles, a provider's apiKey)");
  gatewayOpts(
    modelsAuth
      .command("clear <id>")
      .description("end an auth profile's cooldowns and disable on every node (needs operator.admin)")
      .option("--json", "print the gateway's answer as JSON"),
  ).action((id, opts) => run(async () => (await import("./models.js")).runModelsAuthClear(id, opts)));
  const sandbox = program
    .command("sandbox")
    .description("sandboxes of exec and the file tools (agents.defaults.sandbox): list, explain, recreate");
  sandbox
    .command("list", { isDefault: true })
    .description("every scope with a sandbox under the state dir: backend, agent or session, last use")
    .option("--json", "print as JSON")
    .option("--config <path>", "config file")
    .action((opts) => run(async () => (await import("./sandbox.js")).runSandboxList(opts)));
  sandbox
    .command("explain")
    .description("whether a session's runs are sandboxed and why, the backend's view and limits, and exec's policy")
    .option("--agent <id>", "the agent (default: the session key's, else the default agent)")
    .option("--session <key>", "the session (default: the agent's main session)")
    .option("--json", "print as JSON")
    .option("--config <path>", "config file")
    .action((opts) => run(async () => (await import("./sandbox.js")).runSandboxExplain(opts)));
  sandbox
    .command("recreate")
    .description("remove sandboxes so their next run starts fresh (a session scope's files and container go)")
    .option("--all", "every sandbox")
    .option("--agent <id>", "the sandboxes of one agent")
    .option("--session <key>", "the sandbox of one session (scope session)")
    .option("--config <path>", "config file")
    .action((opts) => run(async () => (await import("./sandbox.js")).runSandboxRecreate(opts)));
  const approvals = program
    .command("approvals")
    .description(
      "exec commands, tool calls and budget-paused runs waiting for an operator on a running gateway (needs operator.approvals)",
    );
  gatewayOpts(
    approvals
      .command("list", { isDefault: true })
      .description("what waits, why, in which session, for how long, and its console URL (the default)")
      .option("--json", "print the gateway's answer as JSON"),
  ).action((opts) => run(async () => (await import("./approvals.js")).runApprovalsList(opts)));
  for (const [name, decision, what] of [
    ["allow", "allow-once", "let it run this once"],
    [
      "allow-always",
      "allow-always",
      "let it run, and remember the command for this agent (inside your token's sessions)",
    ],
    ["deny", "deny", "refuse it; the model is told an operator denied it (a budget approval: the run ends)"],
    ["raise", "raise", "a run paused by a budget: go on, and let this budget no longer pause this run"],
  ] as const) {
    gatewayOpts(
      approvals
        .command(`${name} <id>`)
        .description(`answer approval <id>: ${what}`)
        .option("--json", "print the gateway's answer as JSON"),
    ).action((id, opts) => run(async () => (await import("./approvals.js")).runApprovalsResolve(id, decision, opts)));
  }
  const cron = program
    .command("cron")
    .description("scheduled agent turns of a running gateway: list, add, rm, run (jobs also come from cron.jobs)");
  gatewayOpts(
    cron
      .command("list", { isDefault: true })
      .description("list the jobs (config and added ones), their next run and recent results (the default)")
      .option("--json", "print the gateway's answer as JSON")
      .option("--runs <n>", "recent runs to fetch per job, 0-100 (default 10)"),
  ).action((opts) => run(async () => (await import("./cron.js")).runCronList(opts)));
  gatewayOpts(
    cron
      .command("add")
      .description("add a job; it is stored and survives restarts (needs operator.admin)")
      .requiredOption("--id <id>", "job id: letters, digits, ., - and _ (not the id of a config job)")
      .requiredOption(
        "--schedule <cron>",
        'cron schedule: 5 fields (minute hour day month weekday), or 6 with seconds first, e.g. "0 9 * * 1-5"',
      )
      .requiredOption(
        "-m, --message <text>",
        "the message each run sends to the agent (once)",
        // a second -m used to replace the first silently
        (text: string, given: string | undefined) => {
          if (given !== undefined) throw new InvalidArgumentError("-m/--message given more than once; give it once");
          return text;
        },
      )
      .option("--tz <zone>", "IANA time zone of the schedule (default: the gateway's)")
      .option("--agent <id>", "agent id (default: the default agent)")
      .option(
        "-s, --session-key <key>",
        "run in this session, keeping its history (default cron:<id>, a fresh transcript per run)",
      )
      .option("--timeout <seconds>", "abort a run this long after it starts; it is recorded as timeout")
      .option("--model <provider/model>", "model for this job's runs")
      .option("--disabled", "add it without scheduling it (cron run still runs it)"),
  ).action((opts) => run(async () => (await import("./cron.js")).runCronAdd(opts)));
  gatewayOpts(
    cron
      .command("rm <id>")
      .description("remove an added job and its run history (config jobs are removed in the config)"),
  ).action((id, opts) => run(async () => (await import("./cron.js")).runCronRemove(id, opts)));
  gatewayOpts(
    cron
      .command("run <id>")
      .description("run a job now, outside its schedule; prints the run id (needs operator.admin)")
      .option("--json", "print {ok, id, runId}"),
  ).action((id, opts) => run(async () => (await import("./cron.js")).runCronRun(id, opts)));

  program
    .command("usage")
    .description(
      "model spend from a running gateway's cost ledger: totals per day and per agent, session, token or model",
    )
    .option("--by <group>", "agent | session | token | model", "agent")
    .option(
      "--since <time>",
      "from an ISO time (2026-11-30T18:00:00Z) or a duration back from now (90s, 15m, 1h, 7d)",
      "7d",
    )
    .option("--agent <id>", "only this agent's calls")
    .option("--session <key>", "only this session's calls")
    .option("--json", "print the gateway's answer (usage.summary) as JSON")
    .option("--url <ws-url>", "gateway URL (default LOOPGATE_GATEWAY_URL or ws://127.0.0.1:<gateway.port>)")
    .option("--token <token>", "gateway token (default LOOPGATE_GATEWAY_TOKEN or gateway.auth.token)")
    .option("--config <path>", "config file")
    .action((opts) => run(async () => (await import("./usage.js")).runUsage(opts)));

  program
    .command("audit")
    .description(
      "show a running gateway's audit ledger: who started which run, which tools ran, how each ended (metadata only), oldest first",
    )
    .option("--session <key>", "only this session's rows")
    .option(
      "--since <time>",
      "only rows since an ISO time (2026-11-30T18:00:00Z) or a duration back from now (90s, 15m, 1h, 7d)",
    )
    .option("--limit <n>", "at most the newest n rows", "100")
    .option("--json", "print {events, dropped} as JSON")
    .option("--url <ws-url>", "gateway URL (default LOOPGATE_GATEWAY_URL or ws://127.0.0.1:<gateway.port>)")
    .option("--token <token>", "gateway token (default LOOPGATE_GATEWAY_TOKEN or gateway.auth.token)")
    .option("--no-color", "no colour")
    .option("--config <path>", "config file")
    .action((opts) => run(async () => (await import("./audit.js")).runAudit(opts)));

  const storage = program.command("storage").description("move a state dir's store between backends");
  storage
    .command("migrate")
    .description(
      "copy the state dir's SQLite store (sessions, transcripts, blobs, runs and their events, audit ledger, cron) into Postgres, then check the row counts; the SQLite file is only read",
    )
    .requiredOption("--to <url>", "target database: postgres://user[:password]@host[:port]/db")
    .option("--schema <name>", "put the tables in this schema (created if missing; default: the search_path's, public)")
    .option("--state-dir <dir>", "state dir to copy (default LOOPGATE_STATE_DIR, or the one --config points to)")
    .option("--config <path>", "config file (only to find the state dir)")
    .option("--dry-run", "check both sides and print what would be copied; write nothing")
    .option(
      "--force",
      "delete every Loopgate row the target schema holds before copying (without it a target with any rows is refused)",
    )
    .addHelpText(
      "after",
      "\nRefused while a process (a gateway, a loopgate command) has the state dir's store open, while a gateway node\nheartbeats on the target, and when the store was written by a newer loopgate. Exit codes: 0 copied (or dry run ok),\n1 refused or failed (nothing of the SQLite file changes), 2 usage.\n",
    )
    .action((opts) => run(async () => (await import("./storage-migrate.js")).runStorageMigrate(opts)));

  program
    .command("logs")
    .description(
      "print the gateway's log (<state dir>/logs/gateway.log, the lines `loopgate gateway` also writes to stderr)",
    )
    .option("-n, --lines <n>", "how many of the last lines (default 50)")
    .option("-f, --follow", "keep printing new lines until Ctrl-C")
    .option("--config <path>", "config file (only to find the state dir)")
    .action((opts) => run(async () => (await import("./logs.js")).runLogs(opts)));

  program
    .command("dashboard")
    .description("print the running gateway's web console URL and open it in a browser (xdg-open / open)")
    .option("--no-open", "only print the URL")
    .option("--url <ws-url>", "gateway URL (default LOOPGATE_GATEWAY_URL or ws://127.0.0.1:<gateway.port>)")
    .option("--config <path>", "config file")
    .action((opts) => run(async () => (await import("./dashboard.js")).runDashboard(opts)));

  program
    .command("gateway")
    .description("run the gateway: WebSocket RPC, HTTP /health and the web console (http://<host>:<port>/) on one port")
    .option("--port <n>", "port (default LOOPGATE_GATEWAY_PORT, gateway.port, 18789)")
    .option("--bind <mode>", "loopback (default), lan, or a host address")
    .option(
      "--token <token>",
      "require this token from clients (default LOOPGATE_GATEWAY_TOKEN or gateway.auth.token); visible in ps",
    )
    .option("--token-file <path>", "require the token stored in this file (one line) from clients")
    .option("--config <path>", "config file")
    .option("--verbose", "log debug lines too (each RPC call); default level LOOPGATE_LOG_LEVEL or info")
    .option("--log-format <format>", "text (default, or LOOPGATE_LOG_FORMAT) or json: one JSON object per line")
    .action((opts) => run(async () => (await import("./gateway.js")).runGatewayCli(opts)));
}

// A mistyped option or command prints commander's one line ("error: unknown option '--foo'") and where to look,
// instead of the whole help: set on every command once all exist, each naming its own help.
const hintHelp = (cmd: Command, pathSoFar: string): void => {
  const full = pathSoFar ? `${pathSoFar} ${cmd.name()}` : cmd.name();
  cmd.showHelpAfterError(`(see ${full} --help)`);
  for (const sub of cmd.commands) hintHelp(sub, full);
};
hintHelp(program, "");

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // help and version are "errors" to commander with exit code 0
    process.exit(err.exitCode === 0 ? 0 : EXIT.usage);
  }
  reportAndExit(err);
}
