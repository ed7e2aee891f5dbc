/**
 * Adds `listener` to the set kept under `key` and returns its removal. The removal forgets the key once its set is
 * empty (so a map of per-run listeners does not grow with the runs it has seen) and then calls `onEmpty`. Removing
 * twice is harmless; a set that was replaced meanwhile (the key forgotten and listened to again) is left alone.
 */
export function addKeyedListener<K, L>(map: Map<K, Set<L>>, key: K, listener: L, onEmpty?: () => void): () => void {
  let set = map.get(key);
  if (!set) {
    set = new Set();
    map.set(key, set);
  }
  set.add(listener);
  const listeners = set;
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && map.get(key) === listeners) {
      map.delete(key);
      onEmpty?.();
    }
  };
}
