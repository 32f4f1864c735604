/**
 * The messages between the main isolate and its serving workers.
 *
 * @module
 */

import type { AppConfig } from "../config.ts";

/** Main → worker. */
export type ToWorker =
  | { kind: "start"; config: AppConfig; port: number; hostname: string }
  | { kind: "stop"; timeoutMs: number };

/** Worker → main. */
export type FromWorker =
  | { kind: "ready" }
  | { kind: "failed"; message: string }
  | { kind: "stopped" };
