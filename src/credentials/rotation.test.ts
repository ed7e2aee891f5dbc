/**
 * Auth profiles in real runs: a real runtime over a real SQLite file, the OpenAI Chat Completions provider over real
 * HTTP against the fake model server, which answers per API key. The clock is manual, so cooldowns expire on demand.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { AgentService } from "../agent/service.js";
import { parseConfig } from "../config/load.js";
import { silentLogger } from "../infra/logger.js";
import { sqliteRuntime } from "../node/compose.js";
import type { AgentEvent } from "../protocol/agent-events.js";
import type { AuthProfileStatus } from "../protocol/payloads.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import {
  type CapturedRequest,
  type FakeModelServer,
  type FakeTurn,
  openAIErrorTurn,
  requestApiKey,
  startFakeModelServer,
} from "../testing/fake-model-server.js";
import { ManualClock } from "../testing/manual-clock.js";

const KEYS = { one: "sk-rot-key-one-0000000001", two: "sk-rot-key-two-0000000002", three: "sk-rot-key-three-003" };

let server: FakeModelServer;
/** how the fake answers each key; anything not listed answers text */
const answers = new Map<string, (r: CapturedRequest) => FakeTurn>();
beforeAll(async () => {
  server = await startFakeModelServer({
    respond: (r) => answers.get(requestApiKey(r) ?? "")?.(r) ?? { text: `answered with ${keyName(r)}` },
  });
});
afterAll(() => server.close());

const keyName = (r: CapturedRequest) =>
  Object.entries(KEYS).find(([, key]) => key === requestApiKey(r))?.[0] ?? "no key";

const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(() => {
  answers.clear();
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const rateLimited =
  (retryAfter = "30") =>
  () =>
    openAIErrorTurn(429, "Rate limit reached for requests", "rate_limit_exceeded", { "retry-after": retryAfter });

function harness(extra: Record<string, unknown> = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-rot-"));
  dirs.push(dir);
  const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
  stores.push(store);
  const clock = new ManualClock(Date.parse("2026-01-05T10:00:00Z"));
  const env = { LG_KEY_ONE: KEYS.one, LG_KEY_TWO: KEYS.two, LG_KEY_THREE: KEYS.three };
  const rt = sqliteRuntime({
    config: parseConfig({
      agents: { defaults: { model: { primary: "fake/m1" } } },
      models: {
        providers: {
          fake: {
            api: "openai-completions",
            baseUrl: server.baseUrl,
            models: [{ id: "m1" }, { id: "m2" }],
            retry: { attempts: 0 },
          },
        },
      },
      auth: {
        profiles: {
          // biome-ignore lint/suspicious/noTemplateCurlyInString: config env references
          "fake:one": { provider: "fake", key: "${LG_KEY_ONE}" },
          // biome-ignore lint/suspicious/noTemplateCurlyInString: config env references
          "fake:two": { provider: "fake", key: "${LG_KEY_TWO}" },
        },
      },
      ...extra,
    }),
    stateDir: dir,
    store: new SqliteStoreAdapter(store),
    logger: silentLogger,
    clock,
    env,
  });
  const service = new AgentService(rt);
  const events: AgentEvent[] = [];
  rt.bus.subscribeLocal((ev) => {
    events.push(ev);
  });
  let n = 0;
  const run = async (extra: Record<string, unknown> = {}) => {
    const from = server.requests.length;
    const accepted = await service.accept({ message: "hello", idempotencyKey: `r${++n}`, ...extra });
    const final = await service.final(accepted.runId);
    const keys = server.requests.slice(from).map(keyName);
    const lifecycle = events
      .filter((e) => e.runId === accepted.runId && e.stream === "lifecycle")
      .map((e) => e.data as Record<string, unknown>);
    return { final, keys, lifecycle, rotations: lifecycle.filter((d) => d.phase === "auth_rotate") };
  };
  const status = async (id: string) => (await rt.authProfiles.status()).find((p) => p.id === id) as AuthProfileStatus;
  return { rt, clock, service, run, status, store };
}

describe("rotation inside a run", () => {
  it("a key that answers 429 with retry-after 30: the turn succeeds on the next key in the same run, and the session stays there", async () => {
    const h = harness();
    answers.set(KEYS.one, rateLimited("30"));
    const first = await h.run();
    expect(first.final.status, first.final.error).toBe("ok");
    expect(first.final.result.payloads[0]?.text).toBe("answered with two");
    expect(first.keys).toEqual(["one", "two"]); // one request each, no backoff sleep in between
    expect(first.rotations).toEqual([{ phase: "auth_rotate", from: "fake:one", to: "fake:two", reason: "rate_limit" }]);
    expect(first.lifecycle.some((d) => d.phase === "retry")).toBe(false);
    expect(first.final.result.meta.authProfile).toBe("fake:two");

    const now = h.clock.now();
    expect(await h.status("fake:one")).toMatchObject({
      state: "cooldown",
      until: now + 30_000,
      reason: "rate_limit",
      models: [{ model: "m1", until: now + 30_000 }],
      errorCount: 1,
    });
    expect((await h.status("fake:two")).state).toBe("ok");

    // the next turns stay on the second key and never touch the first
    for (let i = 0; i < 2; i++) {
      const next = await h.run();
      expect(next.keys).toEqual(["two"]);
      expect(next.rotations).toEqual([]);
    }
    expect((await h.store.getSession("agent:main:main"))?.authProfile).toBe("fake:two");

    // once the cooldown is over and the key healthy again, a success on it clears it
    answers.delete(KEYS.one);
    h.clock.advance(31_000);
    expect((await h.status("fake:one")).state).toBe("ok");
    const pinned = await h.run();
    expect(pinned.keys).toEqual(["two"]); // the session's pin holds (prompt cache locality)
    const fresh = await h.run({ sessionKey: "agent:main:other" });
    expect(fresh.keys).toEqual(["one"]);
    const cleared = await h.status("fake:one");
    expect(cleared).toMatchObject({ state: "ok", errorCount: 0 });
    expect(h.store.listAuthHealth().find((r) => r.profileId === "fake:one" && r.model === "m1")).toEqual({
      profileId: "fake:one",
      model: "m1",
      errorCount: 0,
    });
  });

  it("a user pin written between turns by another writer is honoured, taken from the session row the turn loads under its lock", async () => {
    const h = harness();
    expect((await h.run()).keys).toEqual(["one"]);
    // another writer of the same file (sessions.patch on another process) pins the second key
    const other = new SqliteStore(h.store.file);
    stores.push(other);
    other.updateSession("agent:main:main", { authProfileOverride: "fake:two" });
    const reads = vi.spyOn(h.store, "getSession");
    expect((await h.run()).keys).toEqual(["two"]);
    // intake's lookup, the turn's options, and the history load under the write lock (the durable accept checks the
    // session with a one-column read of its own, not getSession): the key chooser reads no row of its own
    expect(reads).toHaveBeenCalledTimes(3);
  });

  it("a rate limit cools one model of a profile: a sibling model of the same key stays usable", async () => {
    const h = harness();
    answers.set(KEYS.one, (r) => (r.body.model === "m1" ? rateLimited("60")() : { text: "m2 on one" }));
    expect((await h.run()).keys).toEqual(["one", "two"]);
    const sibling = await h.run({ sessionKey: "agent:main:m2", model: "fake/m2" });
    expect(sibling.keys).toEqual(["one"]);
    expect(sibling.final.result.payloads[0]?.text).toBe("m2 on one");
  });

  it("a 402 disables the profile for every model of the provider; a 401 rotates and is reported", async () => {
    const h = harness();
    answers.set(KEYS.one, () => openAIErrorTurn(402, "You have run out of credit", "insufficient_quota"));
    const billing = await h.run();
    expect(billing.final.status).toBe("ok");
    expect(billing.rotations).toEqual([{ phase: "auth_rotate", from: "fake:one", to: "fake:two", reason: "billing" }]);
    expect(await h.status("fake:one")).toMatchObject({
      state: "disabled",
      reason: "billing",
      until: h.clock.now() + 5 * 3_600_000,
    });
    const otherModel = await h.run({ sessionKey: "agent:main:b", model: "fake/m2" });
    expect(otherModel.keys).toEqual(["two"]);

    answers.set(KEYS.two, () => openAIErrorTurn(401, `Incorrect API key provided: ${KEYS.two}`, "invalid_api_key"));
    h.clock.advance(6 * 3_600_000);
    answers.delete(KEYS.one);
    const refused = await h.run({ sessionKey: "agent:main:c", authProfile: "fake:two" });
    expect(refused.keys).toEqual(["two", "one"]);
    expect(refused.rotations).toEqual([{ phase: "auth_rotate", from: "fake:two", to: "fake:one", reason: "auth" }]);
    expect((await h.status("fake:two")).state).toBe("disabled");
    // the endpoint echoed the key in its error: neither the events nor the status carry it
    expect(JSON.stringify(refused)).not.toContain(KEYS.two);
  });

  it("when every profile is cooling the run goes to model fallback, after the rotation it could make", async () => {
    const h = harness({
      agents: { defaults: { model: { primary: "fake/m1", fallbacks: ["spare/m"] } } },
      models: {
        providers: {
          fake: { api: "openai-completions", baseUrl: server.baseUrl, models: [{ id: "m1" }], retry: { attempts: 0 } },
          spare: { api: "openai-completions", baseUrl: server.baseUrl, apiKey: KEYS.three, models: [{ id: "m" }] },
        },
      },
    });
    answers.set(KEYS.one, rateLimited("30"));
    answers.set(KEYS.two, rateLimited("45"));
    const r = await h.run();
    expect(r.final.status, r.final.error).toBe("ok");
    expect(r.keys).toEqual(["one", "two", "three"]);
    expect(r.lifecycle.filter((d) => d.phase === "auth_rotate" || d.phase === "fallback")).toEqual([
      { phase: "auth_rotate", from: "fake:one", to: "fake:two", reason: "rate_limit" },
      { phase: "fallback", from: "fake/m1", to: "spare/m", reason: "rate_limit" },
    ]);
    expect(r.final.result.meta.authProfile).toBe("spare:default");
    // both cooling: the next run tries the one usable again soonest first, and only it
    const next = await h.run({ sessionKey: "agent:main:next" });
    expect(next.keys.slice(0, 2)).toEqual(["one", "three"]);
  });

  it("the user's pin (sessions.patch authProfile) is preferred while usable and kept across a reset; the session pin is not", async () => {
    const h = harness();
    await h.run();
    expect((await h.store.getSession("agent:main:main"))?.authProfile).toBe("fake:one");
    await h.service.patchSession("agent:main:main", { authProfile: "fake:two" });
    expect((await h.run()).keys).toEqual(["two"]);
    await h.rt.sessionLifecycle.reset("agent:main:main", { reason: "reset", marker: "reset" });
    const after = await h.store.getSession("agent:main:main");
    expect(after?.authProfileOverride).toBe("fake:two");
    expect(after?.authProfile).toBeUndefined();
    expect((await h.run()).keys).toEqual(["two"]);
    // while the pinned key cools, the order's next one answers; the pin is preferred again once it is usable
    answers.set(KEYS.two, rateLimited("10"));
    expect((await h.run()).keys).toEqual(["two", "one"]);
    answers.delete(KEYS.two);
    h.clock.advance(11_000);
    expect((await h.run()).keys).toEqual(["two"]);
    await expect(h.service.patchSession("agent:main:main", { authProfile: "fake:nope" })).rejects.toThrow(
      /unknown auth profile "fake:nope" \(configured: fake:one, fake:two\)/,
    );
  });
});
