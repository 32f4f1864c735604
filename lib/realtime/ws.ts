/**
 * A realtime subscription over a WebSocket. The client sends
 * `{"type":"subscribe","topics":[…],"lastEventId"?}` and
 * `{"type":"unsubscribe","topics":[…]}`; the first message may carry the
 * token (`"token"`) when the URL did not. The server sends
 * `{"type":"ready","topics":[…],"reset"?}`, `{"type":"event","eventId",…}`
 * and `{"type":"error","status","code","error"}`; a refused subscribe
 * changes nothing, and the connection stays open unless its token ends.
 *
 * Every message the server sends (ready, error, event) counts against the
 * connection's backlog (backlog.ts): a client that does not read its
 * replies is closed (4503) like one that does not read its events. While
 * `MAX_WAITING_MESSAGES` of a client's messages wait to be handled, it is
 * read no further. So neither what it is sent nor what it sends is
 * buffered without bound.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { statusOf } from "../http/envelope.ts";
import type { Frame } from "./frames.ts";
import type { Sink, Subscriber } from "./subscriber.ts";
import { Backlog } from "./backlog.ts";
import type { ServerSocket } from "../http/websocket.ts";

/** Largest message a client may send (bytes). */
export const MAX_CLIENT_MESSAGE = 16 * 1024;

/** Client messages that may wait to be handled (one is handled at a time). */
export const MAX_WAITING_MESSAGES = 64;

const TOO_SLOW = "Cannot keep up: the client reads too slowly";

/** The WebSocket side of a subscriber. */
export class WsSink implements Sink {
  readonly #socket: ServerSocket;
  readonly #backlog: Backlog;
  readonly #limit: number;
  #onClose: () => void;
  #closed = false;

  /** `limit`: bytes that may wait unsent before the client counts as too slow. */
  /** `onClose` runs once when it ends (the hub forgets it at once). */
  constructor(socket: ServerSocket, limit: number, onClose: () => void) {
    this.#socket = socket;
    this.#limit = limit;
    this.#onClose = onClose;
    this.#backlog = new Backlog(limit);
  }

  /** Sends a message; false when the client is now too far behind. */
  #send(text: string): boolean {
    if (this.#closed || this.#socket.readyState !== WebSocket.OPEN) {
      return false;
    }
    this.#socket.send(text);
    return this.#backlog.ok(this.#socket.bufferedAmount);
  }

  /** Sends a reply; a client too far behind is closed (as for events). */
  #reply(text: string): void {
    if (!this.#send(text) && !this.#closed) this.end(503, TOO_SLOW);
  }

  event(frame: Frame): boolean {
    return this.#send(frame.ws);
  }

  ready(topics: string[], reset: boolean): void {
    this.#reply(
      JSON.stringify({ type: "ready", topics, ...(reset && { reset }) }),
    );
  }

  heartbeat(): void {
    // Deno pings WebSocket clients itself (idleTimeout).
  }

  async drain(): Promise<void> {
    while (
      !this.#closed && this.#socket.readyState === WebSocket.OPEN &&
      this.#socket.bufferedAmount > this.#limit
    ) await new Promise((r) => setTimeout(r, 10));
  }

  /** Sends an error message (the connection stays). */
  error(err: unknown): void {
    const e = err instanceof MoonbaseError
      ? err
      : new MoonbaseError("invalid", "Cannot handle the message");
    this.#reply(JSON.stringify({
      type: "error",
      status: e.status ?? statusOf(e.code),
      code: e.code,
      error: e.message,
    }));
  }

  end(status: number, message: string): void {
    if (this.#closed) return;
    // A client already too far behind is not sent one more message.
    if (this.#socket.bufferedAmount <= this.#limit) {
      this.#send(JSON.stringify({
        type: "error",
        status,
        code: MoonbaseError.withStatus(status, message).code,
        error: message,
      }));
    }
    this.#closed = true;
    // A client that never reads may never complete the close: forget it now.
    this.#onClose();
    try {
      // 4000 + HTTP status: an application close code a client can read.
      this.#socket.close(4000 + status, message.slice(0, 120));
    } catch { /* closed */ }
  }

  get closed(): boolean {
    return this.#closed;
  }
}

/** A client message, checked. */
export type ClientMessage =
  | {
    type: "subscribe";
    topics: unknown[];
    lastEventId?: string;
    token?: string;
  }
  | { type: "unsubscribe"; topics: unknown[]; token?: string }
  | { type: "auth"; token: string };

/**
 * Parses a client message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseClientMessage } from "moonbase/lib/realtime/ws.ts";
 * assert.deepEqual(parseClientMessage('{"type":"subscribe","topics":["posts"]}'), { type: "subscribe", topics: ["posts"] });
 * assert.throws(() => parseClientMessage("{"), { code: "invalid" });
 * assert.throws(() => parseClientMessage('{"type":"x"}'), { code: "invalid" });
 * ```
 */
export function parseClientMessage(data: unknown): ClientMessage {
  if (typeof data !== "string" || data.length > MAX_CLIENT_MESSAGE) {
    throw new MoonbaseError(
      "invalid",
      `Cannot read the message: send JSON text of at most ${MAX_CLIENT_MESSAGE} bytes`,
    );
  }
  let m: unknown;
  try {
    m = JSON.parse(data);
  } catch {
    throw new MoonbaseError("invalid", "Cannot read the message: not JSON");
  }
  if (typeof m !== "object" || m === null || Array.isArray(m)) {
    throw new MoonbaseError(
      "invalid",
      "Cannot read the message: not an object",
    );
  }
  const o = m as Record<string, unknown>;
  const token = o.token === undefined ? undefined : o.token;
  if (token !== undefined && typeof token !== "string") {
    throw new MoonbaseError(
      "invalid",
      "Cannot read the message: token must be a string",
    );
  }
  if (o.type === "auth") {
    if (typeof token !== "string") {
      throw new MoonbaseError("invalid", "Cannot authenticate: token missing");
    }
    return { type: "auth", token };
  }
  if (o.type !== "subscribe" && o.type !== "unsubscribe") {
    throw new MoonbaseError(
      "invalid",
      'Cannot read the message: type must be "subscribe", "unsubscribe" or "auth"',
    );
  }
  if (!Array.isArray(o.topics)) {
    throw new MoonbaseError(
      "invalid",
      "Cannot read the message: topics must be an array",
    );
  }
  const last = o.lastEventId;
  if (last !== undefined && typeof last !== "string") {
    throw new MoonbaseError(
      "invalid",
      "Cannot read the message: lastEventId must be a string",
    );
  }
  return {
    type: o.type,
    topics: o.topics,
    ...(last !== undefined && o.type === "subscribe" && { lastEventId: last }),
    ...(token !== undefined && { token }),
  } as ClientMessage;
}

/** Topic keys of a subscriber, for `ready`. */
export function topicKeys(sub: Subscriber): string[] {
  return [...sub.topics.keys()];
}
