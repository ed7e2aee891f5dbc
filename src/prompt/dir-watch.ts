import fs from "node:fs";
import path from "node:path";

/**
 * Whether anything in a few directories may have changed since the caller last looked, told by fs.watch, so that
 * a turn does not stat every bootstrap file and list every skills folder to find out that nothing did.
 *
 * Use: `if (await gate.mayHaveChanged()) { gate.arm(dirs); ...look at the files... }`. `arm` starts the watches
 * before the caller looks, so an edit made while it reads is seen by the next check rather than lost.
 *
 * A directory that cannot be watched (missing, too many watches, a platform without fs.watch) makes every check
 * answer "maybe", which is the old per-turn check; a missing directory is watched through its parent, so that
 * creating it is noticed. Watches do not keep the process alive.
 */
export class DirChangeGate {
  private readonly watchers = new Map<string, fs.FSWatcher>();
  private dirty = true;
  private blind = false;

  /**
   * True when the caller must look again. An edit that finished before this call is seen: the watch events
   * already queued are delivered first (two event-loop turns, so that a poll phase runs in between).
   */
  async mayHaveChanged(): Promise<boolean> {
    if (this.dirty || this.blind) return true;
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.dirty) return true;
    await new Promise<void>((resolve) => setImmediate(resolve));
    return this.dirty;
  }

  /** Watches exactly `dirs` from now on and clears the flag; call before looking at their contents. */
  arm(dirs: Iterable<string>): void {
    this.dirty = false;
    this.blind = false;
    const wanted = new Set<string>();
    for (const dir of dirs) {
      const target = watchable(dir);
      if (target === undefined) this.blind = true;
      else wanted.add(target);
    }
    for (const [dir, watcher] of this.watchers) {
      if (wanted.has(dir)) continue;
      watcher.close();
      this.watchers.delete(dir);
    }
    for (const dir of wanted) {
      if (this.watchers.has(dir)) continue;
      try {
        const watcher = fs.watch(dir, { persistent: false }, () => {
          this.dirty = true;
        });
        // the directory went away or the watch broke: look again, and watch anew then
        watcher.on("error", () => {
          this.dirty = true;
          watcher.close();
          if (this.watchers.get(dir) === watcher) this.watchers.delete(dir);
        });
        this.watchers.set(dir, watcher);
      } catch {
        this.blind = true;
      }
    }
  }

  close(): void {
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
    this.dirty = true;
  }
}

/** The directory itself, or for a missing one its nearest existing parent (so its creation is an event). */
function watchable(dir: string): string | undefined {
  let at = path.resolve(dir);
  for (;;) {
    const st = fs.statSync(at, { throwIfNoEntry: false });
    if (st?.isDirectory()) return at;
    if (st) return undefined; // a file where a directory should be: nothing to watch, look every time
    const parent = path.dirname(at);
    if (parent === at) return undefined;
    at = parent;
  }
}
