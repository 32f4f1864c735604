/**
 * The thumbnail workers of one isolate: at most `concurrency` thumbnails
 * are made at once, each on a worker of its own (lib/files/thumb_worker.ts),
 * a few more wait their turn, and past that a request gets 503 with
 * `Retry-After` at once, so many distinct sizes cannot take every core.
 *
 * Workers start on the first thumbnail (libvips takes ~150 ms to load) and
 * live until `close()`: terminating one does not stop libvips' own threads,
 * so one is replaced only when it answers nothing long after its deadline.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { ThumbSize } from "../schema/thumb_sizes.ts";
import type {
  ThumbFormat,
  ThumbJob,
  ThumbLimits,
  ThumbReply,
} from "./thumb_image.ts";

/** A made thumbnail, or why there is none. */
export type ThumbResult =
  | { ok: true; bytes: Uint8Array<ArrayBuffer>; width: number; height: number }
  | Extract<ThumbReply, { ok: false }>;

/** How many thumbnails are made at once, how many wait, and each one's limits. */
export interface ThumbPoolOptions {
  concurrency: number;
  /** Thumbnails waiting for a worker, past which a request gets 503. */
  queue: number;
  limits: ThumbLimits;
  /**
   * Milliseconds after which a job that has not answered is taken as hung
   * (default: twice the deadline and 5 s): its worker is replaced and the
   * job answers "timeout".
   */
  hungMs?: number;
}

interface Slot {
  worker: Worker;
  busy: boolean;
  done?: (reply: ThumbReply) => void;
}

/** Makes thumbnails on workers, a bounded number at once. */
export class ThumbPool {
  readonly options: ThumbPoolOptions;
  readonly #slots: Slot[] = [];
  readonly #waiting: ((slot?: Slot) => void)[] = [];
  #next = 0;
  #closed = false;

  /** A pool; no worker starts before the first thumbnail. */
  constructor(options: ThumbPoolOptions) {
    this.options = options;
  }

  /** Thumbnails being made now. */
  get running(): number {
    return this.#slots.filter((s) => s.busy).length;
  }

  /**
   * Makes a thumbnail of the bytes `read` returns (read only once a worker
   * is free; undefined: nothing to make). Throws a 503 `MoonbaseError` at
   * once when the queue is full, or when the wait outlasts the deadline.
   */
  async make(
    format: ThumbFormat,
    size: ThumbSize,
    read: () => Promise<Uint8Array<ArrayBuffer> | undefined>,
  ): Promise<ThumbResult | undefined> {
    const slot = await this.#take();
    try {
      const bytes = await read();
      if (!bytes) return undefined;
      return await this.#run(slot, {
        id: ++this.#next,
        bytes,
        format,
        size,
        limits: this.options.limits,
      });
    } finally {
      this.#give(slot);
    }
  }

  /** Ends every worker; thumbnails waiting get 503. */
  close(): void {
    this.#closed = true;
    for (const s of this.#slots.splice(0)) {
      s.worker.terminate();
      s.done?.({ id: 0, ok: false, reason: "unavailable" });
    }
    for (const go of this.#waiting.splice(0)) go(undefined);
  }

  async #take(): Promise<Slot> {
    const free = this.#free();
    if (free) return free;
    if (this.#waiting.length >= this.options.queue) throw busy();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const slot = await new Promise<Slot | undefined>((resolve) => {
      const go = (slot?: Slot) => {
        clearTimeout(timer);
        resolve(slot);
      };
      this.#waiting.push(go);
      timer = setTimeout(() => {
        const i = this.#waiting.indexOf(go);
        if (i >= 0) this.#waiting.splice(i, 1);
        resolve(undefined);
      }, this.options.limits.deadlineMs);
    });
    // Undefined: the wait outlasted the deadline, or the pool closed.
    if (!slot) throw busy();
    return slot;
  }

  #free(): Slot | undefined {
    if (this.#closed) return undefined;
    let slot = this.#slots.find((s) => !s.busy);
    if (!slot && this.#slots.length < this.options.concurrency) {
      slot = this.#start();
    }
    if (slot) slot.busy = true;
    return slot;
  }

  /** Hands a finished slot to the next waiter (it stays busy), or frees it. */
  #give(slot: Slot): void {
    const next = this.#waiting.shift();
    if (this.#slots.includes(slot)) {
      if (next) next(slot);
      else slot.busy = false;
    } else if (next) {
      // The slot's worker was retired: the waiter gets a new one.
      next(this.#free());
    }
  }

  #start(): Slot {
    const worker = new Worker(
      new URL("./thumb_worker.ts", import.meta.url).href,
      { type: "module" },
    );
    const slot: Slot = { worker, busy: false };
    worker.onmessage = (e: MessageEvent<ThumbReply>) => {
      const done = slot.done;
      slot.done = undefined;
      done?.(e.data);
    };
    worker.onerror = (e) => {
      // The worker failed to load (libvips missing from a build): its jobs
      // answer "unavailable"; a new worker is tried for the next one.
      e.preventDefault();
      this.#retire(slot, "unavailable");
    };
    this.#slots.push(slot);
    return slot;
  }

  /**
   * Drops a worker that failed (its job: "unavailable", tried again next
   * time) or hung ("timeout": the image is remembered as one that cannot be
   * made, not retried on the next request — each retry would leave another
   * worker's libvips threads running).
   */
  #retire(slot: Slot, reason: "unavailable" | "timeout"): void {
    const i = this.#slots.indexOf(slot);
    if (i >= 0) this.#slots.splice(i, 1);
    slot.worker.terminate();
    const done = slot.done;
    slot.done = undefined;
    done?.({ id: 0, ok: false, reason });
  }

  #run(slot: Slot, job: ThumbJob): Promise<ThumbResult> {
    // The worker stops the job itself at its deadline; one that has not
    // answered well after it is hung and is replaced.
    const hung = this.options.hungMs ??
      this.options.limits.deadlineMs * 2 + 5000;
    return new Promise<ThumbResult>((resolve) => {
      const timer = setTimeout(() => {
        this.#retire(slot, "timeout");
      }, hung);
      slot.done = (reply) => {
        clearTimeout(timer);
        resolve(
          reply.ok
            ? {
              ok: true,
              bytes: reply.bytes,
              width: reply.width,
              height: reply.height,
            }
            : { id: reply.id, ok: false, reason: reply.reason },
        );
      };
      if (!this.#slots.includes(slot)) {
        slot.done({ id: job.id, ok: false, reason: "unavailable" });
        return;
      }
      slot.worker.postMessage(job, [job.bytes.buffer]);
    });
  }
}

function busy(): MoonbaseError {
  return new MoonbaseError(
    "unavailable",
    "Cannot make the thumbnail now: too many thumbnails are being made; try again shortly",
    null,
    { "Retry-After": "2" },
  );
}
