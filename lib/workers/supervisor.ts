/**
 * The main isolate's serving workers (isolates 1 … N-1 of `serve --workers
 * N`; isolate 0 is the main one). They start together and are ready once
 * each listens; `stop` drains them all. A worker that dies (an uncaught
 * error) is not restarted: `onExit` is called once, and the serve command
 * stops the whole process with a non-zero code, for its supervisor
 * (systemd, Docker, Kubernetes) to restart it whole. A process serving on
 * fewer isolates than asked, or with one isolate's in-memory state lost,
 * would be harder to notice than a restart.
 *
 * @module
 */

import type { AppConfig } from "../config.ts";
import type { PeerConfig } from "../cluster/link.ts";
import type { FromWorker, ToWorker } from "./messages.ts";

/** What every worker is started with. */
export interface WorkerStart {
  config: AppConfig;
  peers: PeerConfig;
  port: number;
  hostname: string;
}

interface Member {
  index: number;
  worker: Worker;
  stopped: Promise<void>;
}

/** The running workers. */
export class Workers {
  readonly #members: Member[] = [];
  #stopping = false;
  #exited = false;
  /** Called once, when a worker dies (not when asked to stop). */
  onExit: (index: number, message: string) => void = () => {};

  /** Starts isolates 1 … `peers.count - 1`; resolves once all listen (rejects, stopping them, when one cannot). */
  static async start(start: WorkerStart): Promise<Workers> {
    const set = new Workers();
    const ready: Promise<void>[] = [];
    for (let index = 1; index < start.peers.count; index++) {
      ready.push(set.#spawn(index, start));
    }
    try {
      await Promise.all(ready);
    } catch (err) {
      await set.stop(1000);
      throw err;
    }
    return set;
  }

  #spawn(index: number, start: WorkerStart): Promise<void> {
    const worker = new Worker(new URL("./worker.ts", import.meta.url).href, {
      type: "module",
      name: `moonbase-worker-${index}`,
    });
    let settle!: { ok: () => void; fail: (err: Error) => void };
    const ready = new Promise<void>((ok, fail) => settle = { ok, fail });
    let stoppedOk!: () => void;
    const stopped = new Promise<void>((r) => stoppedOk = r);
    worker.onmessage = (e: MessageEvent<FromWorker>) => {
      const m = e.data;
      if (m.kind === "ready") settle.ok();
      else if (m.kind === "failed") {
        settle.fail(new Error(`worker ${index}: ${m.message}`));
      } else if (m.kind === "stopped") stoppedOk();
    };
    worker.onerror = (e: ErrorEvent) => {
      // Handled here: the error must not rethrow in the main isolate.
      e.preventDefault();
      const message = e.message || "uncaught error";
      settle.fail(new Error(`worker ${index}: ${message}`));
      stoppedOk();
      worker.terminate();
      if (!this.#stopping && !this.#exited) {
        this.#exited = true;
        this.onExit(index, message);
      }
    };
    this.#members.push({ index, worker, stopped });
    worker.postMessage(
      {
        kind: "start",
        config: { ...start.config, peers: { ...start.peers, index } },
        port: start.port,
        hostname: start.hostname,
      } satisfies ToWorker,
    );
    return ready;
  }

  /** How many workers run. */
  get size(): number {
    return this.#members.length;
  }

  /**
   * Drains every worker as `app.stop` does (requests in flight finish, up to
   * `timeoutMs`), then ends them.
   */
  async stop(timeoutMs = 10_000): Promise<void> {
    this.#stopping = true;
    for (const m of this.#members) {
      m.worker.postMessage({ kind: "stop", timeoutMs } satisfies ToWorker);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all(this.#members.map((m) => m.stopped)),
      new Promise((r) => timer = setTimeout(r, timeoutMs + 5000)),
    ]);
    clearTimeout(timer);
    for (const m of this.#members) m.worker.terminate();
  }
}
