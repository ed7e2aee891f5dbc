import { describe, expect, it } from "vitest";
import { closableModel, modelRequest, readFirstThenStop } from "../providers/early-stop.test-support.js";
import { ScriptedProvider } from "../providers/scripted.js";
import {
  emptyUsage,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamEvent,
  ProviderError,
} from "../providers/types.js";
import { ManualClock } from "../testing/manual-clock.js";
import { CLOUD_IDLE_MS, resolveIdleTimeoutMs, SELF_HOSTED_IDLE_MS, withIdleWatchdog } from "./idle-watchdog.js";

async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

/**
 * A model whose chunks the test releases one by one; it stops like an SDK does when its signal fires
 * (throwing whatever the signal's reason is, as fetch does).
 */
function pacedModel() {
  const queue: ModelStreamEvent[] = [];
  let wake: (() => void) | undefined;
  let finished = false;
  const provider: ModelProvider = {
    id: "cloudy",
    api: "openai-completions",
    async *stream(request: ModelRequest) {
      while (true) {
        if (request.signal.aborted) throw request.signal.reason;
        const ev = queue.shift();
        if (ev) {
          yield ev;
          continue;
        }
        if (finished) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
          request.signal.addEventListener("abort", () => resolve(), { once: true });
        });
      }
    },
  };
  return {
    provider,
    send(delta: string) {
      queue.push({ type: "text_delta", delta });
      wake?.();
    },
    finish() {
      queue.push({ type: "done", stopReason: "stop", usage: emptyUsage() });
      finished = true;
      wake?.();
    },
  };
}

function request(signal: AbortSignal = new AbortController().signal): ModelRequest {
  return { model: "m", messages: [{ role: "user", content: "hi" }], tools: [], signal };
}

/** Consumes a stream in the background, recording text and the error it ended with. */
function consume(stream: AsyncIterable<ModelStreamEvent>) {
  const state = { text: "", error: undefined as unknown, ended: false };
  const done = (async () => {
    try {
      for await (const ev of stream) if (ev.type === "text_delta") state.text += ev.delta;
    } catch (err) {
      state.error = err;
    } finally {
      state.ended = true;
    }
  })();
  return { state, done };
}

describe("withIdleWatchdog", () => {
  it("a model that stalls is cut off after the idle window with a ProviderError of kind timeout", async () => {
    const clock = new ManualClock(0);
    // the scripted model's delay stands in for a stalled stream; it is never reached because the watchdog fires first
    const stalled = new ScriptedProvider("cloudy", { turns: [{ text: "too late", delayMs: 10 * 60_000 }] });
    const watched = withIdleWatchdog(stalled, 120_000, clock);

    const { state, done } = consume(watched.stream(request()));
    await flush();
    clock.advance(119_999);
    await flush();
    expect(state.ended).toBe(false);

    clock.advance(1);
    await done;
    expect(state.error).toBeInstanceOf(ProviderError);
    expect((state.error as ProviderError).kind).toBe("timeout");
    expect((state.error as ProviderError).message).toMatch(/cloudy: no data from the model for 120 s/);
    expect(state.text).toBe("");
  });

  it("chunks that keep arriving within the window keep the request alive, however long it takes overall", async () => {
    const clock = new ManualClock(0);
    const model = pacedModel();
    const watched = withIdleWatchdog(model.provider, 1_000, clock);

    const { state, done } = consume(watched.stream(request()));
    for (const word of ["one ", "two ", "three ", "four"]) {
      await flush();
      clock.advance(900); // 3.6 s in total, but never 1 s of silence
      model.send(word);
    }
    await flush();
    model.finish();
    await done;

    expect(state.error).toBeUndefined();
    expect(state.text).toBe("one two three four");
    expect(clock.pendingTimers).toBe(0); // no timer left behind to fire later
  });

  it("silence after some chunks still times out, and what already arrived was delivered", async () => {
    const clock = new ManualClock(0);
    const model = pacedModel();
    const watched = withIdleWatchdog(model.provider, 1_000, clock);

    const { state, done } = consume(watched.stream(request()));
    await flush();
    model.send("partial ");
    await flush();
    clock.advance(1_000);
    await done;

    expect(state.text).toBe("partial ");
    expect((state.error as ProviderError).kind).toBe("timeout");
  });

  it("an abort from outside passes through as an abort, not as a timeout", async () => {
    const clock = new ManualClock(0);
    const stalled = new ScriptedProvider("cloudy", { turns: [{ text: "never", delayMs: 10 * 60_000 }] });
    const watched = withIdleWatchdog(stalled, 120_000, clock);
    const outer = new AbortController();

    const { state, done } = consume(watched.stream(request(outer.signal)));
    await flush();
    outer.abort(new Error("user pressed stop"));
    await done;

    expect(state.error).toBeInstanceOf(ProviderError);
    expect((state.error as ProviderError).kind).toBe("aborted");
    expect(clock.pendingTimers).toBe(0);
  });

  it("an outer abort with the run's own reason reaches the model as that reason", async () => {
    const clock = new ManualClock(0);
    const model = pacedModel();
    const watched = withIdleWatchdog(model.provider, 1_000, clock);
    const outer = new AbortController();
    const reason = new Error("run timed out after 60 s");

    const { state, done } = consume(watched.stream(request(outer.signal)));
    await flush();
    outer.abort(reason);
    await done;
    expect(state.error).toBe(reason);
  });

  it("a reader that stops after the first chunk closes the model's stream and leaves no idle timer behind", async () => {
    const model = closableModel(3);
    const clock = new ManualClock(0);
    const outer = new AbortController();
    const first = await readFirstThenStop(withIdleWatchdog(model, 120_000, clock), modelRequest(outer.signal));
    expect(first).toEqual({ type: "text_delta", delta: "t0" });
    expect(model.streams[0]?.closedEarly).toBe(true);
    expect(clock.pendingTimers).toBe(0);
    // the run's signal no longer reaches the closed call
    outer.abort();
    expect(model.streams[0]?.request.signal.aborted).toBe(false);
  });

  it("a zero or infinite window leaves the provider unwrapped (no watchdog)", () => {
    const model = pacedModel();
    const clock = new ManualClock(0);
    expect(withIdleWatchdog(model.provider, 0, clock)).toBe(model.provider);
    expect(withIdleWatchdog(model.provider, Number.POSITIVE_INFINITY, clock)).toBe(model.provider);
  });
});

describe("resolveIdleTimeoutMs", () => {
  const FORTY_EIGHT_HOURS = 172_800_000;

  it("cloud providers get 120 s", () => {
    expect(CLOUD_IDLE_MS).toBe(120_000);
    expect(resolveIdleTimeoutMs({ selfHosted: false, runTimeoutMs: FORTY_EIGHT_HOURS })).toBe(120_000);
  });

  it("self-hosted providers get 300 s", () => {
    expect(SELF_HOSTED_IDLE_MS).toBe(300_000);
    expect(resolveIdleTimeoutMs({ selfHosted: true, runTimeoutMs: FORTY_EIGHT_HOURS })).toBe(300_000);
  });

  it("models.providers.<id>.timeoutSeconds sets the window for that provider", () => {
    expect(
      resolveIdleTimeoutMs({ selfHosted: true, providerTimeoutMs: 900_000, runTimeoutMs: FORTY_EIGHT_HOURS }),
    ).toBe(900_000);
    expect(
      resolveIdleTimeoutMs({ selfHosted: false, providerTimeoutMs: 30_000, runTimeoutMs: FORTY_EIGHT_HOURS }),
    ).toBe(30_000);
  });

  it("a lower finite run timeout caps the window", () => {
    expect(resolveIdleTimeoutMs({ selfHosted: true, providerTimeoutMs: 900_000, runTimeoutMs: 600_000 })).toBe(600_000);
    expect(resolveIdleTimeoutMs({ selfHosted: false, runTimeoutMs: 45_000 })).toBe(45_000);
  });

  it("an unlimited run (0) keeps the idle watchdog", () => {
    expect(resolveIdleTimeoutMs({ selfHosted: false, runTimeoutMs: 0 })).toBe(120_000);
    expect(resolveIdleTimeoutMs({ selfHosted: true, runTimeoutMs: 0 })).toBe(300_000);
    expect(resolveIdleTimeoutMs({ selfHosted: false, providerTimeoutMs: 900_000, runTimeoutMs: 0 })).toBe(900_000);
  });
});
