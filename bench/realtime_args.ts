/**
 * The realtime benchmark's servers and subscribers: how many idle SSE
 * subscribers, what they subscribe to, and the server options for them
 * (shared by bench/realtime.ts and the profiler).
 *
 * @module
 */

import { PINGS } from "./seed.ts";

/** The idle SSE subscribers held open. */
export const SUBSCRIBERS = 1000;
/** What each subscriber subscribes to. */
export const SUBSCRIBE_PATH = `/api/v1/realtime?topics=${PINGS}`;

/**
 * `serverArgs` of a server for `SUBSCRIBERS` subscribers, with more
 * options (`--realtime off`, or its own realtime connection limit).
 */
export const realtimeArgs = (
  serverArgs: string[],
  opts: string[],
): string[] => [
  ...serverArgs.slice(0, 3),
  ...["--maxConnections", String(SUBSCRIBERS * 4), ...opts],
  ...serverArgs.slice(3),
];

/** The realtime-on options of `realtimeArgs`. */
export const REALTIME_ON = [
  "--realtimeMaxConnections",
  String(SUBSCRIBERS * 2),
];
