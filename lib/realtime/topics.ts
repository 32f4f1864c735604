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
import {
  expandText,
  type ExpandTree,
  parseExpand,
} from "../records/expand/paths.ts";
import {
  canUseAs,
  type ExpandNode,
  planExpand,
} from "../records/expand/plan.ts";

/** The expansions a topic asks for its events' records (`?expand=`). */
export interface TopicExpand {
  /** The paths, written back in a stable order (same text, same expansions). */
  readonly text: string;
  readonly tree: ExpandTree;
  /** Resolved for the subscriber by `checkTopics`. */
  plan: readonly ExpandNode[];
}

/** One topic. */
export interface Topic {
  /** `posts` or `posts/<id>` (without its options). */
  readonly key: string;
  readonly entity: string;
  /** Record topics: the record's id. */
  readonly id?: string;
  /** `posts?expand=author`: the expansions of its events' records. */
  readonly expand?: TopicExpand;
}

const TOPIC =
  /^([A-Za-z0-9_]{1,64})(?:\/([A-Za-z0-9_-]{1,64}))?(?:\?([^\s]{0,2100}))?$/;

/** A topic's options (`expand` only), URL-encoded after its `?`. */
function topicExpand(
  key: string,
  query: string | undefined,
): TopicExpand | undefined {
  if (query === undefined || query === "") return undefined;
  const params = new URLSearchParams(query);
  for (const name of new Set(params.keys())) {
    if (name !== "expand") {
      throw invalid(
        `Cannot subscribe to ${key}: unknown topic option ${
          JSON.stringify(name.slice(0, 64))
        } (topics take expand: <entity>?expand=<paths>)`,
      );
    }
  }
  if (params.getAll("expand").length > 1) {
    throw invalid(`Cannot subscribe to ${key}: expand given twice`);
  }
  const tree = parseExpand(params.get("expand") ?? "", `subscribe to ${key}`);
  if (tree.size === 0) return undefined;
  return { text: expandText(tree), tree, plan: [] };
}

function invalid(message: string): MoonbaseError {
  return new MoonbaseError("invalid", message);
}

/**
 * Parses topics (a `topics` query value split at commas, or a WebSocket
 * message's list): each well formed, at most `max`, duplicates dropped (the
 * last one's options kept). A topic may carry options after a `?`,
 * URL-encoded as in a URL (`posts?expand=author%2Ccomments_via_post`: a
 * comma inside is `%2C`, since commas split the `topics` parameter).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseTopics } from "moonbase/lib/realtime/topics.ts";
 * assert.deepEqual(parseTopics(["posts", "posts/a1", "posts"], 10).map((t) => t.key), ["posts", "posts/a1"]);
 * assert.equal(parseTopics(["posts?expand=author%2Ctags"], 10)[0].expand?.text, "author,tags");
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
        } (use <entity> or <entity>/<id>, optionally ?expand=<paths>)`,
      );
    }
    const name = m[2] ? `${m[1]}/${m[2]}` : m[1];
    const expand = topicExpand(name, m[3]);
    // A repeat keeps its place; its options are the last ones given.
    out.set(name, {
      key: name,
      entity: m[1],
      ...(m[2] && { id: m[2] }),
      ...(expand && { expand }),
    });
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
 * give). Custom rules are checked per event. A topic's `expand` is
 * resolved for the caller here (an unknown path: 400 naming it).
 */
export function checkTopics(
  schemas: Registry,
  topics: readonly Topic[],
  auth: AuthValue,
): void {
  for (const t of topics) {
    const entity = schemas.byName(t.entity);
    if (!isExposed(entity, t.entity)) {
      // Most likely the rest of an expand cut at a comma by `topics=`.
      const cut = topics.some((o) => o.expand) && t.id === undefined
        ? " (a comma inside a topic's expand is written %2C)"
        : "";
      throw invalid(
        `Cannot subscribe to ${t.key}: no entity ${
          JSON.stringify(t.entity)
        }${cut}`,
      );
    }
    if (entity.type === "view") {
      throw invalid(
        `Cannot subscribe to ${t.key}: views have no change events`,
      );
    }
    authorize(entity, t.id === undefined ? "list" : "get", auth);
    if (t.expand) {
      t.expand.plan = planExpand(
        {
          lookup: (name) => schemas.byName(name),
          canUse: canUseAs(auth),
          action: `subscribe to ${t.key}`,
        },
        entity,
        t.expand.tree,
      );
    }
  }
}
