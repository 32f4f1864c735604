/**
 * A realtime subscription as a Server-Sent Events response. The stream's
 * queue is bounded in bytes (backlog.ts): a client that stops reading fills
 * it and is disconnected instead of buffered without bound.
 *
 * @module
 */

import type { Frame } from "./frames.ts";
import { SSE_PING, sseMessage, sseRetry } from "./frames.ts";
import type { Sink } from "./subscriber.ts";
import { Backlog } from "./backlog.ts";

/** The SSE side of a subscriber. */
export class SseSink implements Sink {
  readonly stream: ReadableStream<Uint8Array>;
  #c!: ReadableStreamDefaultController<Uint8Array>;
  #closed = false;
  #onClose: () => void;
  readonly #limit: number;
  readonly #backlog: Backlog;
  #waiting: (() => void)[] = [];

  /** `limit`: bytes that may wait; `onClose` runs once, however it ends. */
  constructor(limit: number, onClose: () => void) {
    this.#onClose = onClose;
    this.#limit = limit;
    this.#backlog = new Backlog(limit);
    this.stream = new ReadableStream<Uint8Array>({
      start: (c) => {
        this.#c = c;
      },
      // Called whenever the queue is below the limit again.
      pull: () => this.#wake(),
      cancel: () => this.#finish(),
    }, new ByteLengthQueuingStrategy({ highWaterMark: limit }));
    this.#write(sseRetry(2000));
  }

  #write(bytes: Uint8Array): boolean {
    if (this.#closed) return false;
    try {
      this.#c.enqueue(bytes);
    } catch {
      this.#finish();
      return false;
    }
    return this.#backlog.ok(this.#limit - (this.#c.desiredSize ?? 0));
  }

  event(frame: Frame): boolean {
    return this.#write(frame.sse);
  }

  ready(topics: string[], reset: boolean): void {
    if (reset) this.#write(sseMessage("reset", { topics }));
    this.#write(sseMessage("ready", { topics, ...(reset && { reset }) }));
  }

  heartbeat(): void {
    if (!this.#write(SSE_PING)) {
      this.end(503, "Cannot keep up: the client reads too slowly");
    }
  }

  end(status: number, message: string): void {
    if (this.#closed) return;
    try {
      if ((this.#c.desiredSize ?? 0) > 0) {
        this.#c.enqueue(sseMessage("error", { status, error: message }));
        this.#c.close();
      } else {
        // A slow client's queue is full: drop the connection, queue and all.
        this.#c.error(new Error(message));
      }
    } catch { /* closed */ }
    this.#finish();
  }

  drain(): Promise<void> {
    if (this.#closed || (this.#c.desiredSize ?? 0) > 0) {
      return Promise.resolve();
    }
    return new Promise((r) => this.#waiting.push(r));
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const w of waiting) w();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#wake();
    this.#onClose();
  }
}
