/**
 * The wire format of realtime messages (a public contract): an event's JSON
 * `{"action","entity","id","record","timestamp"}` (and `expand_error` when
 * a topic's expansions could not be given), framed for SSE
 * (`id:`/`event:`/`data:`) or for WebSocket (`{"type":"event","eventId",…}`).
 * One frame is built per event and shape and shared by every subscriber it
 * goes to; each framing is encoded once.
 *
 * @module
 */

import type { ChangeAction } from "../records/changes.ts";
import type { RecordData } from "../records/codec.ts";

const encoder = new TextEncoder();

/** One event as sent. */
export class Frame {
  readonly id: number;
  readonly action: ChangeAction;
  /** The event's JSON (the SSE `data:` line). */
  readonly json: string;
  #sse: Uint8Array | undefined;
  #ws: string | undefined;

  constructor(
    id: number,
    action: ChangeAction,
    entity: string,
    recordId: string,
    record: RecordData,
    at: number,
    expandError?: string,
  ) {
    this.id = id;
    this.action = action;
    this.json = JSON.stringify({
      action,
      entity,
      id: recordId,
      record,
      timestamp: new Date(at).toISOString(),
      // The topic's expansions could not be given (too many records).
      ...(expandError !== undefined && { expand_error: expandError }),
    });
  }

  /** The SSE message. */
  get sse(): Uint8Array {
    return this.#sse ??= encoder.encode(
      `id: ${this.id}\nevent: ${this.action}\ndata: ${this.json}\n\n`,
    );
  }

  /** The WebSocket message. */
  get ws(): string {
    return this.#ws ??= `{"type":"event","eventId":"${this.id}",${
      this.json.slice(1)
    }`;
  }
}

/**
 * An SSE message of a named event with JSON data (no id).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sseMessage } from "moonbase/lib/realtime/frames.ts";
 * assert.equal(new TextDecoder().decode(sseMessage("ready", { topics: ["a"] })), 'event: ready\ndata: {"topics":["a"]}\n\n');
 * ```
 */
export function sseMessage(event: string, data: unknown): Uint8Array {
  return encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/** An SSE comment (the heartbeat). */
export const SSE_PING: Uint8Array = encoder.encode(": ping\n\n");

/** `retry:` for EventSource's reconnect delay (ms). */
export function sseRetry(ms: number): Uint8Array {
  return encoder.encode(`retry: ${Math.trunc(ms)}\n\n`);
}
