/**
 * Helpers of the realtime attack suites (`tests/attack_realtime*_test.ts`):
 * entities with chosen rules, a "keeper" subscription that keeps the feed
 * of a shared server running, resume anchors, and a WebSocket client that
 * queues what the server sends.
 *
 * @module
 */

import { assertStatus, type TestServer } from "./_server.ts";
import {
  openSse,
  type SseClient,
  type SseMessage,
} from "./_realtime_client.ts";

/** One access rule. */
export interface RuleOf {
  mode: "public" | "auth" | "custom" | "";
  expr: string;
}

const PUBLIC: RuleOf = { mode: "public", expr: "" };

/** A custom rule. */
export function custom(expr: string): RuleOf {
  return { mode: "custom", expr };
}

/** The admin-only rule. */
export const ADMIN_ONLY: RuleOf = { mode: "", expr: "" };

/** Creates an entity (every rule public unless given) through the schemas API. */
export async function entity(
  s: TestServer,
  name: string,
  fields: Record<string, unknown>[],
  rules: Partial<Record<"list" | "get" | "add" | "update" | "delete", RuleOf>> =
    {},
  extra: Record<string, unknown> = {},
): Promise<void> {
  const r = await s.request("POST", "/api/v1/schemas", {
    token: await s.adminToken(),
    body: {
      name,
      type: "base",
      fields,
      rules: {
        list: PUBLIC,
        get: PUBLIC,
        add: PUBLIC,
        update: PUBLIC,
        delete: PUBLIC,
        ...rules,
      },
      ...extra,
    },
  });
  assertStatus(r, 201, `create entity ${name}`);
}

/** String fields by name. */
export function strings(...names: string[]): Record<string, unknown>[] {
  return names.map((name) => ({ name, type: "string" }));
}

/** Creates a record as admin; returns it. */
export async function add(
  s: TestServer,
  name: string,
  body: Record<string, unknown>,
  token?: string,
): Promise<Record<string, unknown> & { id: string }> {
  const r = await s.request("POST", `/api/v1/entities/${name}`, {
    token: token ?? await s.adminToken(),
    body,
  });
  assertStatus(r, 201, `create a record of ${name}`);
  return r.data;
}

/** Updates a record as admin. */
export async function patch(
  s: TestServer,
  name: string,
  id: string,
  body: Record<string, unknown>,
): Promise<void> {
  const r = await s.request("PATCH", `/api/v1/entities/${name}/${id}`, {
    token: await s.adminToken(),
    body,
  });
  assertStatus(r, 200, `update ${name}/${id}`);
}

/** Deletes a record as admin. */
export async function remove(
  s: TestServer,
  name: string,
  id: string,
): Promise<void> {
  const r = await s.request("DELETE", `/api/v1/entities/${name}/${id}`, {
    token: await s.adminToken(),
  });
  assertStatus(r, 204, `delete ${name}/${id}`);
}

/** Changes an entity's schema as admin (rules, name, has_api …). */
export async function alter(
  s: TestServer,
  name: string,
  body: Record<string, unknown>,
): Promise<void> {
  const r = await s.request("PATCH", `/api/v1/schemas/${name}`, {
    token: await s.adminToken(),
    body,
  });
  assertStatus(r, 200, `change entity ${name}`);
}

/** A subscription (asserted 200 and `ready`); returns the client. */
export async function subscribe(
  s: TestServer,
  query: string,
  opts: { token?: string; headers?: Record<string, string> } = {},
): Promise<SseClient & { reset: boolean }> {
  const c = await openSse(s, query, opts);
  if (c.status !== 200) {
    throw new Error(
      `subscribe ${query}: ${c.status} ${JSON.stringify(c.body)}`,
    );
  }
  const first = await c.next();
  if (first?.event === "reset") {
    const ready = await c.next();
    if (ready?.event !== "ready") throw new Error("no ready after reset");
    return Object.assign(c, { reset: true });
  }
  if (first?.event !== "ready") {
    throw new Error(
      `subscribe ${query}: first message ${JSON.stringify(first)}`,
    );
  }
  return Object.assign(c, { reset: false });
}

/** Change events (not ready/reset/error) of a list of messages. */
export function changes(msgs: SseMessage[]): SseMessage[] {
  return msgs.filter((m) =>
    m.event === "create" || m.event === "update" || m.event === "delete"
  );
}

/**
 * A shared server's keeper: an admin subscription to an entity of its own,
 * kept open for the whole file so that the feed keeps running (cases then
 * do not depend on the feed starting again), and a way to get resume
 * anchors: an event id every instance has delivered.
 */
export interface Keeper {
  /** The keeper's entity (a public topic every subscription may add). */
  name: string;
  /** Writes a record of the keeper's entity; resolves with its event id once delivered. */
  anchor(): Promise<number>;
  close(): void;
}

/** Opens the keeper of a server. */
export async function keeper(s: TestServer, name = "zz_keep"): Promise<Keeper> {
  await entity(s, name, strings("t"));
  const c = await subscribe(s, `topics=${name}`, {
    token: await s.adminToken(),
  });
  return {
    name,
    async anchor() {
      await add(s, name, { t: "anchor" });
      for (;;) {
        const m = await c.next(5000);
        if (!m) throw new Error("the keeper got no event");
        if (m.event === "create") return Number(m.id);
      }
    },
    close: () => c.close(),
  };
}

/**
 * The messages of `c` up to the keeper's next anchor (not included): the
 * subscription must include the keeper's topic. Events arrive in id order,
 * so everything the server was going to send before it has arrived.
 */
export async function upTo(c: SseClient, keep: Keeper): Promise<SseMessage[]> {
  const id = await keep.anchor();
  const out: SseMessage[] = [];
  for (;;) {
    const m = await c.next(5000);
    if (!m) throw new Error(`no anchor ${id}; got ${JSON.stringify(out)}`);
    if (m.id !== undefined && Number(m.id) === id) return out;
    if (m.data?.entity !== keep.name) out.push(m);
  }
}
