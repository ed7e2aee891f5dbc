/*
 * Issue 32 must-have 3 (SPEC 26, live configuration) as an operator meets it: a real `loopgate gateway` child process
 * (dist/cli/main.js: run `npm run build` first) whose config file is edited while it serves, real `loopgate agent`
 * runs through it, a fake OpenAI-compatible model server on loopback, and config.get / config.patch over a real
 * WebSocket. No restart anywhere.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayRequestError } from "../../src/client/errors.js";
import { GatewayClient } from "../../src/client/gateway-client.js";
import type { CapturedRequest, FakeModelServer, FakeTurn } from "../../src/testing/fake-model-server.js";
import { startFakeModelServer } from "../../src/testing/fake-model-server.js";
import { cli } from "../fixtures/cli/sandbox.js";

const ADMIN = "admin-token-0123456789";
const READER = "read-token-0123456789";
const PROVIDER_KEY = "sk-provider-secret-42";
/** How long one child may live: a gateway serves the whole describe, on two cores shared with other work. */
const CHILD_GUARD_MS = 180_000;

const children: ChildProcess[] = [];
const dirs: string[] = [];
let model: FakeModelServer;

/** The model: asked to "run date" it calls exec once; a tool result is echoed; otherwise it names the model. */
function respond(req: CapturedRequest): FakeTurn {
  const messages = (req.body.messages ?? []) as Array<{ role: string; content: unknown }>;
  const last = messages.at(-1);
  if (last?.role === "tool") return { text: `tool said: ${String(last.content).slice(0, 200)}` };
  if (JSON.stringify(last?.content).includes("run date"))
    return { toolCalls: [{ name: "exec", arguments: { command: "date +%Y" } }] };
  return { text: `reply from ${String(req.body.model)}` };
}

beforeAll(async () => {
  if (!fs.existsSync(cli)) throw new Error(`${cli} is missing: run \`npm run build\` before the end-to-end tests`);
  model = await startFakeModelServer({ respond });
});

afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await model?.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function configText(opts: { aliases?: Record<string, string>; allowlist?: string[]; extra?: Record<string, unknown> }) {
  const models: Record<string, { alias?: string }> = { "fake/m1": {} };
  for (const [alias, ref] of Object.entries(opts.aliases ?? {})) models[ref] = { alias };
  return `// edited by the test while the gateway serves
${JSON.stringify(
  {
    agents: { defaults: { model: { primary: "fake/m1" }, models } },
    models: {
      providers: {
        fake: {
          api: "openai-completions",
          baseUrl: model.baseUrl,
          apiKey: PROVIDER_KEY,
          models: [{ id: "m1" }, { id: "m2" }],
        },
      },
    },
    tools: { exec: { security: "allowlist", ask: "off", allowlist: opts.allowlist ?? ["echo *"] } },
    gateway: {
      auth: {
        tokens: [
          { token: ADMIN, scopes: ["operator.admin", "operator.read", "operator.write"], sessions: ["*"] },
          { token: READER, scopes: ["operator.read", "operator.write"], sessions: ["*"] },
        ],
      },
    },
    ...opts.extra,
  },
  null,
  2,
)}
`;
}

interface Gateway {
  url: string;
  config: string;
  cliConfig: string;
  env: NodeJS.ProcessEnv;
  child: ChildProcess;
  /** everything the gateway wrote to stderr so far (its log) */
  log(): string;
  /** resolves once the log has a line matching `re` after `from` characters */
  waitForLog(re: RegExp, from?: number): Promise<string>;
}

async function startGateway(text: string): Promise<Gateway> {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-reload-")));
  dirs.push(tmp);
  const config = path.join(tmp, "loopgate.json5");
  fs.writeFileSync(config, text, { mode: 0o600 });
  const cliConfig = path.join(tmp, "cli.json5");
  fs.writeFileSync(cliConfig, "{}\n");
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(LOOPGATE_|OPENCLAW_|OPENAI_|ANTHROPIC_)/.test(k)) env[k] = v;
  }
  Object.assign(env, { LOOPGATE_STATE_DIR: path.join(tmp, "state"), HOME: tmp, NO_COLOR: "1" });
  const child = spawn(process.execPath, [cli, "gateway", "--config", config, "--port", "0"], {
    cwd: tmp,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  setTimeout(() => child.kill("SIGKILL"), CHILD_GUARD_MS).unref();
  let stdout = "";
  let stderr = "";
  const waiters: Array<() => void> = [];
  child.stdout!.setEncoding("utf8").on("data", (c: string) => {
    stdout += c;
    for (const w of waiters.splice(0)) w();
  });
  child.stderr!.setEncoding("utf8").on("data", (c: string) => {
    stderr += c;
    for (const w of waiters.splice(0)) w();
  });
  const until = (check: () => string | undefined) =>
    new Promise<string>((resolve, reject) => {
      const test = () => {
        const found = check();
        if (found !== undefined) return resolve(found);
        if (child.exitCode !== null) return reject(new Error(`gateway exited ${child.exitCode}: ${stderr}`));
        waiters.push(test);
      };
      test();
    });
  const url = await until(() => stdout.match(/listening on (ws:\/\/\S+)/)?.[1]);
  return {
    url,
    config,
    cliConfig,
    env,
    child,
    log: () => stderr,
    waitForLog: (re, from = 0) =>
      until(() =>
        stderr
          .slice(from)
          .split("\n")
          .find((l) => re.test(l)),
      ),
  };
}

/** `loopgate agent` through the gateway, as a user runs it. */
function agent(gw: Gateway, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // the CLI's own config names nothing: the gateway's file may be mid-edit (or broken on purpose)
  const child = spawn(process.execPath, [cli, "agent", "--config", gw.cliConfig, ...args], {
    env: { ...gw.env, LOOPGATE_GATEWAY_URL: gw.url, LOOPGATE_GATEWAY_TOKEN: ADMIN },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Writes the config the way editors save: a temp file beside it, renamed over it. */
function save(gw: Gateway, text: string): number {
  const at = gw.log().length;
  const tmp = `${gw.config}.swp`;
  fs.writeFileSync(tmp, text, { mode: 0o600 });
  fs.renameSync(tmp, gw.config);
  return at;
}

const failure = (err: unknown) =>
  err instanceof GatewayRequestError ? `${err.code}: ${err.message}` : `unexpected: ${String(err)}`;

describe("the gateway's config file, edited while it serves (mode hybrid, the default)", () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startGateway(configText({}));
  });

  it("a new model alias and a changed exec allowlist in the file reach the next agent run, with no restart", async () => {
    const refused = await agent(gw, ["--model", "quick", "-m", "hello"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/unknown model "quick"/);
    const denied = await agent(gw, ["-m", "please run date"]);
    expect(denied.stdout).toMatch(/tool said: .*exec denied.*matches no tools\.exec\.allowlist pattern/);

    const from = save(gw, configText({ aliases: { quick: "fake/m2" }, allowlist: ["echo *", "date *"] }));
    const line = await gw.waitForLog(/config reloaded/, from);
    expect(line).toMatch(/changed="agents\.defaults\.models\.fake\/m2, tools\.exec\.allowlist"/);

    const aliased = await agent(gw, ["--model", "quick", "-m", "hello"]);
    expect(aliased.code).toBe(0);
    expect(aliased.stdout).toContain("reply from m2");
    const allowed = await agent(gw, ["-m", "please run date"]);
    expect(allowed.code).toBe(0);
    expect(allowed.stdout).toMatch(/tool said: \d{4}/);
    expect(gw.child.exitCode).toBeNull();
  });

  it("a broken edit (bad JSON5, then a schema error) is logged with its error and ignored: the gateway keeps serving the old config", async () => {
    const good = configText({ aliases: { quick: "fake/m2" }, allowlist: ["echo *", "date *"] });
    const syntax = await gw.waitForLog(/config reload ignored/, save(gw, good.replace('"tools": {', '"tools": {{')));
    expect(syntax).toMatch(/problems="not valid JSON5 at line \d+, column \d+/);
    const schema = await gw.waitForLog(
      /config reload ignored/,
      save(gw, good.replace('"ask": "off"', '"ask": "sometimes"')),
    );
    expect(schema).toMatch(/problems="tools\.exec\.ask: /);
    expect(gw.log()).not.toContain(PROVIDER_KEY);
    // still the last good config: the alias and the allowlist it added
    const aliased = await agent(gw, ["--model", "quick", "-m", "hello"]);
    expect(aliased.stdout).toContain("reply from m2");
    const allowed = await agent(gw, ["-m", "please run date"]);
    expect(allowed.stdout).toMatch(/tool said: \d{4}/);
  });

  it("gateway.port changed in the file: one warning names it, and the gateway keeps serving where it listens", async () => {
    const text = configText({ aliases: { quick: "fake/m2" }, allowlist: ["echo *", "date *"], extra: {} });
    const withPort = text.replace('"gateway": {', '"gateway": {\n    "port": 19999,');
    const from = save(gw, withPort);
    const warning = await gw.waitForLog(/restart to apply/, from);
    expect(warning).toMatch(/WARN\s+config: restart to apply: gateway\.port$/);
    expect(
      gw
        .log()
        .slice(from)
        .match(/restart to apply/g),
    ).toHaveLength(1);
    const client = await GatewayClient.connect({ url: gw.url, token: ADMIN });
    try {
      const got = await client.request<{ config: { gateway: { port: number } } }>("config.get");
      expect(got.config.gateway.port).toBe(18789);
    } finally {
      await client.close();
    }
  });

  it("config.patch: a stale baseHash is a conflict; the right one applies and config.get shows it; the provider key round-trips unchanged", async () => {
    const client = await GatewayClient.connect({ url: gw.url, token: ADMIN });
    try {
      type Got = {
        hash: string;
        config: { models: { providers: { fake: { apiKey: string } } }; tools: { exec: { allowlist: string[] } } };
      };
      const before = await client.request<Got>("config.get");
      expect(before.hash).toMatch(/^[0-9a-f]{64}$/);
      expect(before.config.models.providers.fake.apiKey).toBe("[redacted]");
      const raw = JSON.stringify({
        models: { providers: { fake: before.config.models.providers.fake } },
        tools: { exec: { allowlist: ["echo *", "date *", "uname *"] } },
      });
      const stale = await client.request("config.patch", { raw, baseHash: "0".repeat(64) }).catch(failure);
      expect(stale).toMatch(/^conflict: params\.baseHash: the config file changed since that config\.get/);

      const patched = await client.request<{ hash: string; changedPaths: string[]; restartRequired: string[] }>(
        "config.patch",
        { raw, baseHash: before.hash, note: "allow uname" },
      );
      expect(patched.changedPaths).toContain("tools.exec.allowlist");
      // the port edited into the file earlier still waits for a restart
      expect(patched.restartRequired).toEqual(["gateway.port"]);
      const after = await client.request<Got>("config.get");
      expect(after.hash).toBe(patched.hash);
      expect(after.config.tools.exec.allowlist).toEqual(["echo *", "date *", "uname *"]);
      const onDisk = fs.readFileSync(gw.config, "utf8");
      expect(JSON.parse(onDisk).models.providers.fake.apiKey).toBe(PROVIDER_KEY);
      expect(fs.statSync(gw.config).mode & 0o777).toBe(0o600);
      // the next run still reaches the model with the same key
      const run = await agent(gw, ["-m", "hello"]);
      expect(run.stdout).toContain("reply from m1");
      expect(model.requests.at(-1)?.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    } finally {
      await client.close();
    }
  });

  it("diagnostics switched on in the file: the stuck-session monitor starts with the new threshold, no restart", async () => {
    const client = await GatewayClient.connect({ url: gw.url, token: ADMIN });
    try {
      type Diag = { enabled: boolean; stuckSessionWarnMs: number };
      expect(await client.request<Diag>("diagnostics.list", {})).toMatchObject({ enabled: false });
      // the file is JSON since config.patch wrote it
      const current = JSON.parse(fs.readFileSync(gw.config, "utf8"));
      const from = save(gw, JSON.stringify({ ...current, diagnostics: { enabled: true, stuckSessionWarnMs: 45000 } }));
      expect(await gw.waitForLog(/config reloaded/, from)).toMatch(
        /changed="diagnostics\.enabled, diagnostics\.stuckSessionWarnMs"/,
      );
      expect(await client.request<Diag>("diagnostics.list", {})).toMatchObject({
        enabled: true,
        stuckSessionWarnMs: 45000,
      });
    } finally {
      await client.close();
    }
  });

  it("config.patch refuses a token without operator.admin, a raw over 1 MiB and invalid JSON5, and changes nothing", async () => {
    const before = fs.readFileSync(gw.config, "utf8");
    const reader = await GatewayClient.connect({ url: gw.url, token: READER });
    const admin = await GatewayClient.connect({ url: gw.url, token: ADMIN });
    try {
      const { hash } = await admin.request<{ hash: string }>("config.get");
      const notAdmin = await reader.request("config.patch", { raw: "{}", baseHash: hash }).catch(failure);
      expect(notAdmin).toMatch(/^unauthorized: /);
      const huge = `{ note: "${"x".repeat(1024 * 1024)}" }`;
      expect(await admin.request("config.patch", { raw: huge, baseHash: hash }).catch(failure)).toMatch(
        /^invalid_params: .*raw/,
      );
      expect(await admin.request("config.patch", { raw: "{ tools: [", baseHash: hash }).catch(failure)).toMatch(
        /^invalid_params: params\.raw: not valid JSON5 at line 1, column \d+/,
      );
      expect(fs.readFileSync(gw.config, "utf8")).toBe(before);
      // still serving
      expect((await admin.request<{ ok: boolean }>("health")).ok).toBe(true);
    } finally {
      await reader.close();
      await admin.close();
    }
  });
});

describe("gateway.reload.mode", () => {
  it("reload mode off: an edit waits until SIGHUP, which reloads the file", async () => {
    const off = (text: string) => text.replace('"gateway": {', '"gateway": {\n    "reload": { "mode": "off" },');
    const gw = await startGateway(off(configText({})));
    const from = save(gw, off(configText({ aliases: { quick: "fake/m2" } })));
    // the file is not watched: the alias is unknown until the operator asks for a reload
    const before = await agent(gw, ["--model", "quick", "-m", "hello"]);
    expect(before.stderr).toMatch(/unknown model "quick"/);
    expect(gw.log().slice(from)).not.toMatch(/config reload/);
    gw.child.kill("SIGHUP");
    const line = await gw.waitForLog(/config reloaded/, from);
    expect(line).toMatch(/reason=SIGHUP changed=agents\.defaults\.models\.fake\/m2$/);
    const after = await agent(gw, ["--model", "quick", "-m", "hello"]);
    expect(after.stdout).toContain("reply from m2");
  });
});
