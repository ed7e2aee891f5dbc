import { describe, expect, it } from "vitest";
import { closableModel, modelRequest, readFirstThenStop } from "./early-stop.test-support.js";
import { type TapEnd, tapStream } from "./stream-tap.js";
import { ProviderError } from "./types.js";

describe("a model stream watched through tapStream", () => {
  it("a reader that stops early closes the model's stream, and only then is the end seen (as closed)", async () => {
    const model = closableModel(3);
    const ends: Array<{ how: TapEnd; closedEarly: boolean | undefined }> = [];
    const tapped = tapStream(() => ({
      stream: model.stream(modelRequest()),
      end: (how) => ends.push({ how, closedEarly: model.streams[0]?.closedEarly }),
    }));
    const first = await readFirstThenStop({ ...model, stream: () => tapped });
    expect(first).toEqual({ type: "text_delta", delta: "t0" });
    expect(model.streams[0]?.closedEarly).toBe(true);
    expect(ends).toEqual([{ how: "closed", closedEarly: true }]);
  });

  it("every event is seen on its way, the end once as finished, and nothing is started before the first read", async () => {
    const model = closableModel(2);
    let started = 0;
    const seen: string[] = [];
    const ends: TapEnd[] = [];
    const tapped = tapStream(() => {
      started++;
      return { stream: model.stream(modelRequest()), event: (ev) => seen.push(ev.type), end: (how) => ends.push(how) };
    });
    expect(started).toBe(0);
    const got: string[] = [];
    for await (const ev of tapped) got.push(ev.type);
    expect(got).toEqual(["text_delta", "text_delta", "done"]);
    expect(seen).toEqual(got);
    expect(ends).toEqual(["finished"]);
    expect(started).toBe(1);
    // read again after its end: done, without starting anew
    expect(await tapped[Symbol.asyncIterator]().next()).toEqual({ done: true, value: undefined });
    expect(started).toBe(1);
  });

  it("an error of the model reaches the reader as the tap maps it, then the end is seen as failed", async () => {
    const order: string[] = [];
    const tapped = tapStream(() => ({
      // biome-ignore lint/correctness/useYield: a model that fails before its first chunk
      stream: (async function* () {
        throw new ProviderError("network", "reset");
      })(),
      error: (err) => {
        order.push("error");
        return new ProviderError("timeout", `mapped: ${(err as Error).message}`);
      },
      end: (how) => order.push(`end ${how}`),
    }));
    await expect(readFirstThenStop({ ...closableModel(), stream: () => tapped })).rejects.toThrow("mapped: reset");
    expect(order).toEqual(["error", "end failed"]);
  });

  it("throw() closes the model's stream and rejects with the error; a start that fails leaves the stream done", async () => {
    const model = closableModel(3);
    const ends: TapEnd[] = [];
    const tapped = tapStream(() => ({ stream: model.stream(modelRequest()), end: (how) => ends.push(how) }));
    const it = tapped[Symbol.asyncIterator]();
    await it.next();
    await expect(it.throw?.(new Error("stop"))).rejects.toThrow("stop");
    expect(model.streams[0]?.closedEarly).toBe(true);
    expect(ends).toEqual(["failed"]);

    const refused = tapStream(async () => {
      throw new Error("refused before the call");
    });
    const r = refused[Symbol.asyncIterator]();
    await expect(r.next()).rejects.toThrow("refused before the call");
    expect(await r.next()).toEqual({ done: true, value: undefined });
  });
});
