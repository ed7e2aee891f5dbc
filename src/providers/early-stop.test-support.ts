/**
 * For the decorators around a provider (idle watchdog, spend metering, the model-call meter, auth profiles): a model
 * whose stream notes whether it was closed before its end, and a reader that stops after the first event, as a run
 * does when it is cancelled between chunks. A decorator whose return() does not reach the model leaves its stream
 * (and, over HTTP, its connection) open.
 */
import { emptyUsage, type ModelProvider, type ModelRequest, type ModelStreamEvent } from "./types.js";

export interface ClosableModel extends ModelProvider {
  /** one entry per stream started: the request it got, and how the stream ended so far */
  readonly streams: Array<{ request: ModelRequest; closedEarly: boolean; finished: boolean }>;
}

/** A model that answers `deltas` text deltas and then its end, on every call. */
export function closableModel(deltas = 3, id = "fake"): ClosableModel {
  const streams: ClosableModel["streams"] = [];
  return {
    id,
    api: "openai-completions",
    streams,
    async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      const seen = { request, closedEarly: false, finished: false };
      streams.push(seen);
      let ended = false;
      try {
        for (let i = 0; i < deltas; i++) yield { type: "text_delta", delta: `t${i}` };
        yield { type: "done", stopReason: "stop", usage: { ...emptyUsage(), output: deltas, total: deltas } };
        ended = true;
      } finally {
        if (ended) seen.finished = true;
        else seen.closedEarly = true;
      }
    },
  };
}

export function modelRequest(signal: AbortSignal = new AbortController().signal): ModelRequest {
  return { model: "m", system: "", messages: [{ role: "user", content: "hi" }], tools: [], signal };
}

/** Reads the first event of the provider's stream and stops there (`break`, so for-await calls return()). */
export async function readFirstThenStop(provider: ModelProvider, request = modelRequest()): Promise<ModelStreamEvent> {
  for await (const ev of provider.stream(request)) return ev;
  throw new Error("the stream had no event");
}
