/**
 * Realtime topics: `<entity>` (every record of it, under the `list` rule)
 * or `<entity>/<id>` (one record, under the `get` rule). Parsing, and the
 * checks a subscription passes before it starts — the one place that says
 * which topics a caller may open.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { AuthValue } from "../caller.ts";
import { authorize, isExposed } from "../records/access.ts";
import type { Registry } from "../records/registry.ts";

/** One topic. */
export interface Topic {
  /** As written: `posts` or `posts/<id>`. */
  readonly key: string;
  readonly entity: string;
  /** Record topics: the record's id. */
  readonly id?: string;
}

const TOPIC = /^([A-Za-z0-9_]{1,64})(?:\/([A-Za-z0-9_-]{1,64}))?$/;

function invalid(message: string): MoonbaseError {
  return new MoonbaseError("invalid", message);
}

/**
 * Parses topics (a `topics` query value split at commas, or a WebSocket
 * message's list): each well formed, at most `max`, duplicates dropped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseTopics } from "moonbase/lib/realtime/topics.ts";
 * assert.deepEqual(parseTopics(["posts", "posts/a1", "posts"], 10).map((t) => t.key), ["posts", "posts/a1"]);
 * assert.throws(() => parseTopics(["po sts"], 10), { code: "invalid" });
 * assert.throws(() => parseTopics([], 10), { code: "invalid" });
 * ```
 */
export function parseTopics(list: readonly unknown[], max: number): Topic[] {
  if (list.length === 0) {
    throw invalid(
      "Cannot subscribe: name at least one topic (topics=<entity>[,<entity>/<id>…])",
    );
  }
  const out = new Map<string, Topic>();
  for (const raw of list) {
    const key = typeof raw === "string" ? raw.trim() : "";
    const m = TOPIC.exec(key);
    if (!m) {
      throw invalid(
        `Cannot subscribe: malformed topic ${
          JSON.stringify(String(raw).slice(0, 80))
        } (use <entity> or <entity>/<id>)`,
      );
    }
    out.set(key, { key, entity: m[1], ...(m[2] && { id: m[2] }) });
  }
  if (out.size > max) {
    throw invalid(`Cannot subscribe: too many topics (at most ${max})`);
  }
  return [...out.values()];
}

/** Splits a `topics` query value. */
export function topicsParam(value: string | null): string[] {
  return (value ?? "").split(",").filter((t) => t.trim() !== "");
}

/**
 * Refuses topics the caller may not open: entities that do not exist or
 * have no API (400), views (400: they have no change events), and rule
 * modes that refuse the caller outright (the 401/403 a list or get would
 * give). Custom rules are checked per event.
 */
export function checkTopics(
  schemas: Registry,
  topics: readonly Topic[],
  auth: AuthValue,
): void {
  for (const t of topics) {
    const entity = schemas.byName(t.entity);
    if (!isExposed(entity, t.entity)) {
      throw invalid(
        `Cannot subscribe to ${t.key}: no entity ${JSON.stringify(t.entity)}`,
      );
    }
    if (entity.type === "view") {
      throw invalid(
        `Cannot subscribe to ${t.key}: views have no change events`,
      );
    }
    authorize(entity, t.id === undefined ? "list" : "get", auth);
  }
}
