/**
 * A model stream watched on its way to the consumer, for the decorators around a provider that only look at each
 * event and at how the stream ended (the idle watchdog, spend metering, the model-call meter).
 *
 * Why not an async generator per decorator: a generator layer costs every event a promise of its own, an `await` of
 * the value it yields and a hop through the generator's request queue, and a gateway's stream passes each event
 * through several such layers (bench/README.md, "stream CPU per token"). This iterator costs an event one `then`.
 *
 * What a generator gave and this keeps: the stream is started by the first `next()` (a decorator's set-up runs
 * then, not when the stream is asked for); `return()` (a consumer that stops early, e.g. `break` in `for await`)
 * closes the upstream stream before `end` runs; `throw()` closes it too and rejects with the error (through `error`, as a generator's catch would see it); after the end,
 * `next()` answers done. One difference that no consumer sees: `next()` calls are not queued, so a consumer must wait
 * for each before asking for the next (as `for await` does).
 */
import type { ModelStreamEvent } from "./types.js";

/** How a stream ended: it ran out, it failed, or its consumer stopped reading (return / throw). */
export type TapEnd = "finished" | "failed" | "closed";

/** What `tapStream`'s start gives: the upstream stream and what to do along it. */
export interface Tapped {
  stream: AsyncIterable<ModelStreamEvent>;
  /** each event, before the consumer gets it (not called for the end) */
  event?(ev: ModelStreamEvent): void;
  /** an error of the upstream stream, before the consumer gets it: what to throw instead (the error itself) */
  error?(err: unknown): unknown;
  /** once, when the stream is over however it ended; not called when `start` failed or the stream never started */
  end?(how: TapEnd): void;
}

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/** The events of the stream `start` opens (at the first `next()`), seen through the hooks it returns with it. */
export function tapStream(start: () => Tapped | Promise<Tapped>): AsyncIterable<ModelStreamEvent> {
  let tap: Tapped | undefined;
  let inner: AsyncIterator<ModelStreamEvent> | undefined;
  let over = false;
  const finish = (how: TapEnd) => {
    if (over) return;
    over = true;
    tap?.end?.(how);
  };
  const onResult = (result: IteratorResult<ModelStreamEvent>): IteratorResult<ModelStreamEvent> => {
    if (result.done) finish("finished");
    else tap?.event?.(result.value);
    return result;
  };
  const onError = (err: unknown): never => {
    // the error is mapped first and the end follows, as a generator's catch runs before its finally
    const thrown = tap?.error ? tap.error(err) : err;
    finish("failed");
    throw thrown;
  };
  const opened = (t: Tapped) => {
    tap = t;
    inner = t.stream[Symbol.asyncIterator]();
    return inner.next().then(onResult, onError);
  };
  const close = (): Promise<unknown> => (inner?.return ? Promise.resolve(inner.return()) : Promise.resolve(DONE));
  const iterator: AsyncIterableIterator<ModelStreamEvent> = {
    next() {
      if (over) return Promise.resolve(DONE);
      if (inner) return inner.next().then(onResult, onError);
      let t: Tapped | Promise<Tapped>;
      try {
        t = start();
      } catch (err) {
        over = true;
        return Promise.reject(err);
      }
      return Promise.resolve(t).then(opened, (err) => {
        over = true;
        throw err;
      });
    },
    return() {
      // not started, or over: nothing to close (a generator asked to return before its first next never runs)
      if (over || !inner) {
        over = true;
        return Promise.resolve(DONE);
      }
      return close().then(() => {
        finish("closed");
        return DONE;
      }, onError);
    },
    throw(err?: unknown) {
      if (over || !inner) {
        over = true;
        return Promise.reject(err);
      }
      // the error comes out of the stream as if the upstream had thrown it: mapped, and the end is "failed"
      return close().then(() => onError(err), onError);
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}
