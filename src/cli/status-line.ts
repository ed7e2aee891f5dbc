/**
 * A one-line status on a terminal (stderr) that redraws in place: "\r", clear to end of line, the text. It only
 * ever occupies the cursor's current line, so anything else written to the terminal must call erase() first.
 *
 * Drawing happens on a timer tick (at most every `intervalMs`), never on show(): a state that lasts less than a
 * tick is never drawn, so fast runs do not flicker. The timer is unref'd (it never keeps the process alive) and
 * runs only while there is something to show.
 */
export interface StatusTimer {
  now(): number;
  /** Calls `fn` every `ms` until the returned function is called. */
  every(ms: number, fn: () => void): () => void;
}

export const systemStatusTimer: StatusTimer = {
  now: () => Date.now(),
  every(ms, fn) {
    const handle = setInterval(fn, ms);
    handle.unref();
    return () => clearInterval(handle);
  },
};

export interface StatusLineOptions {
  write: (s: string) => void;
  color: boolean;
  timer?: StatusTimer;
  intervalMs?: number;
  /** terminal width; a line longer than the terminal would wrap and "\r" could no longer erase it */
  columns?: () => number | undefined;
}

/** What the status line shows, given how long the current state has lasted. */
export type StatusText = (elapsedMs: number) => string;

const CLEAR = "\r\x1b[K";

export class StatusLine {
  private text: StatusText | undefined;
  private since = 0;
  private drawn = false;
  private stopTimer: (() => void) | undefined;
  private readonly timer: StatusTimer;

  constructor(private readonly opts: StatusLineOptions) {
    this.timer = opts.timer ?? systemStatusTimer;
  }

  /** Starts showing `text`; elapsed time counts from now. */
  show(text: StatusText): void {
    this.text = text;
    this.since = this.timer.now();
    this.stopTimer ??= this.timer.every(this.opts.intervalMs ?? 100, () => this.draw());
  }

  /** Removes the line and stops the timer until the next show(). */
  hide(): void {
    this.erase();
    this.text = undefined;
    this.stopTimer?.();
    this.stopTimer = undefined;
  }

  /** Clears the drawn line (if any) so other output starts on a clean line; the next tick draws it again. */
  erase(): void {
    if (!this.drawn) return;
    this.opts.write(CLEAR);
    this.drawn = false;
  }

  private draw(): void {
    if (!this.text) return;
    const line = fitWidth(this.text(this.timer.now() - this.since), this.opts.columns?.());
    this.opts.write(`${CLEAR}${this.opts.color ? `\x1b[2m${line}\x1b[0m` : line}`);
    this.drawn = true;
  }
}

function fitWidth(text: string, columns: number | undefined): string {
  const oneLine = text.replace(/\s+/g, " ");
  // one column spare: writing into the last column makes some terminals wrap at once
  const max = columns && columns > 1 ? columns - 1 : 200;
  const chars = [...oneLine];
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : oneLine;
}
