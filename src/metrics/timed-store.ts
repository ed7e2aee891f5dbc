import type { Store } from "../storage/types.js";

/** Hears one store call: its method, how long it took (seconds) and whether it failed. */
export type StoreCallObserver = (method: string, seconds: number, failed: boolean) => void;

/**
 * The store, with every method call timed (`loopgate_store_call_duration_seconds`). Built only when metrics are on,
 * so a gateway without them calls the store directly. The wrapper's methods are made once, here, not per call; each
 * call's `this` is the real store. A promise is timed until it settles, a plain value (`storageFault`) at once.
 */
export function timedStore(store: Store, observe: StoreCallObserver, now: () => number): Store {
  const timed = Object.create(store) as Store;
  for (const name of methodNames(store)) {
    const method = (store as unknown as Record<string, (...args: unknown[]) => unknown>)[name];
    Object.defineProperty(timed, name, {
      value: (...args: unknown[]) => {
        const began = now();
        const seconds = () => Math.max(0, now() - began) / 1000;
        let result: unknown;
        try {
          result = method.apply(store, args);
        } catch (err) {
          observe(name, seconds(), true);
          throw err;
        }
        if (result instanceof Promise) {
          return result.then(
            (value) => {
              observe(name, seconds(), false);
              return value;
            },
            (err: unknown) => {
              observe(name, seconds(), true);
              throw err;
            },
          );
        }
        observe(name, seconds(), false);
        return result;
      },
    });
  }
  return timed;
}

/** The store's methods, own and inherited (a class's are on its prototype), without the constructor. */
function methodNames(store: Store): string[] {
  const names = new Set<string>();
  for (let o: object | null = store; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const name of Object.getOwnPropertyNames(o)) {
      if (name === "constructor" || names.has(name)) continue;
      const d = Object.getOwnPropertyDescriptor(o, name);
      // getters are read through the prototype as they are (no call to time)
      if (d && typeof d.value === "function") names.add(name);
    }
  }
  return [...names];
}
