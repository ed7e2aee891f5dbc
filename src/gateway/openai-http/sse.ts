import type http from "node:http";
import { BackpressureMonitor } from "../backpressure.js";

/**
 * A `text/event-stream` answer. A client that stops reading is cut off like a slow WebSocket consumer
 * (gateway.maxBufferedBytes for gateway.slowConsumerMs: backpressure.ts), so a stalled reader cannot make the
 * gateway hold a run's whole stream in memory; its run goes on (it was accepted), only the stream ends.
 */
export class SseStream {
  private readonly res: http.ServerResponse;
  private readonly monitor: BackpressureMonitor;
  private opened = false;

  constructor(
    res: http.ServerResponse,
    limits: { maxBufferedBytes: number; slowConsumerMs: number; now: () => number },
  ) {
    this.res = res;
    this.monitor = new BackpressureMonitor({
      limitBytes: limits.maxBufferedBytes,
      graceMs: limits.slowConsumerMs,
      now: limits.now,
    });
  }

  /** the client is gone, or was cut off: nothing more is written */
  get closed(): boolean {
    return this.res.destroyed || this.res.writableEnded;
  }

  open(): void {
    if (this.opened) return;
    this.opened = true;
    this.res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      // a reverse proxy (nginx) must not hold the deltas back
      "x-accel-buffering": "no",
    });
    // the headers go out now: the client knows the request was accepted before the first delta
    this.res.flushHeaders();
  }

  /** `data: <json>` (chat completions), or `event: <name>` + data (the Responses API's typed events) */
  send(data: unknown, event?: string): void {
    this.write(`${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
  }

  /** chat completions end with `data: [DONE]` */
  done(): void {
    this.write("data: [DONE]\n\n");
    this.end();
  }

  end(): void {
    if (!this.closed) this.res.end();
  }

  private write(text: string): void {
    if (this.closed) return;
    this.open();
    const verdict = this.monitor.beforeSend(this.res.writableLength);
    if (verdict.drop) {
      this.res.destroy();
      return;
    }
    if (verdict.watchFlush) this.res.write(text, () => this.monitor.afterFlush(this.res.writableLength));
    else this.res.write(text);
  }
}
