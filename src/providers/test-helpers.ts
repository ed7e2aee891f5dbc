import { expect } from "vitest";
import type { CapturedRequest, FakeModelServer } from "../testing/fake-model-server.js";
import type { ModelRequest, ModelStreamEvent } from "./types.js";

/** Shared by the provider test files (kept out of the build by tsconfig.build.json). */

export function requestFor(defaults: Partial<ModelRequest>) {
  return (overrides: Partial<ModelRequest> = {}): ModelRequest => ({
    model: "test-model",
    messages: [{ role: "user", content: "hi" }],
    tools: [],
    signal: new AbortController().signal,
    ...defaults,
    ...overrides,
  });
}

export async function collect(stream: AsyncIterable<ModelStreamEvent>): Promise<ModelStreamEvent[]> {
  const events: ModelStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** The body of the last request the fake server received, checked to have gone to `path`. */
export function lastBodyAt(server: FakeModelServer, path: string): CapturedRequest["body"] {
  const last = server.requests.at(-1);
  if (!last) throw new Error("no request reached the server");
  expect(last.path).toBe(path);
  return last.body;
}
