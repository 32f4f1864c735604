/**
 * What a caller may do with the entities the records API serves now, the
 * part every rule-checked operation (`service.ts` `RecordService`) starts
 * with: the entity behind a name (404 when not served), the `Access` of one
 * operation (the rule mode, then a custom rule by the `RuleEngine`), what a
 * caller's filter, sort and expansions may read of related entities, and
 * the schema version checks around a read or a write (PostgreSQL: another
 * instance may have changed an entity).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { AuthValue } from "../caller.ts";
import type { Operation } from "../schema/types.ts";
import type { Entity } from "./entity.ts";
import type { Registry } from "./registry.ts";
import {
  assertServed,
  assertWritable,
  authorize,
  isExposed,
} from "./access.ts";
import type { Access } from "./caller_access.ts";
import type { CallerView, RuleEngine, RuleRequest } from "./rule_types.ts";

/** The 404 of a record the caller may not see (or that does not exist). */
export function notFound(entity: Entity): MoonbaseError {
  return new MoonbaseError(
    "not_found",
    `Cannot find record in ${entity.name}: no such id, or not visible to you`,
  );
}

/**
 * The request as the rules of expanded records see it: a read (method
 * GET, no body, as a GET of that record would be), with `req`'s query.
 */
export function readRequest(req: RuleRequest): RuleRequest {
  return {
    body: {},
    method: "GET",
    get query() {
      return req.query;
    },
  };
}

/** The served entities and a caller's access to them, by the rules now. */
export class ServedAccess {
  readonly registry: Registry;
  readonly rules: RuleEngine;

  constructor(registry: Registry, rules: RuleEngine) {
    this.registry = registry;
    this.rules = rules;
  }

  /** The entity behind a records route; 404 when missing or without API. */
  entity(name: string): Entity {
    const e = this.registry.byName(name);
    if (!isExposed(e, name)) {
      throw new MoonbaseError(
        "not_found",
        `Cannot find entity: no entity ${JSON.stringify(name.slice(0, 80))}`,
      );
    }
    assertServed(e, this.registry.viewRefusal(e.id));
    return e;
  }

  /** What `auth` may see and write through `op` (throws a denial). */
  async access(
    entity: Entity,
    op: Operation,
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<Access> {
    assertWritable(entity, op);
    const d = authorize(entity, op, auth);
    return d.kind === "allow"
      ? {}
      : await this.rules.access(entity, op, d.expr, auth, req);
  }

  /**
   * The entity the API serves as `target` now (its name and id unchanged),
   * for reads of `auth` through relations and expansions; undefined when
   * none (not served, a view, refused views).
   */
  served(target: { readonly id: string }): Entity | undefined {
    const e = this.registry.get(target.id);
    if (!e || !isExposed(e, e.name) || e.type === "view") return undefined;
    return this.registry.viewRefusal(e.id) === undefined ? e : undefined;
  }

  /**
   * What `auth` may see of `entity` through `op`, or undefined when its
   * rule mode refuses it outright (401/403 on its own route).
   */
  async readable(
    entity: Entity,
    op: "get" | "list",
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<Access | undefined> {
    try {
      return await this.access(entity, op, auth, req);
    } catch (err) {
      // Refused outright (401/403 on its own route): nothing is readable.
      if (
        err instanceof MoonbaseError &&
        (err.code === "unauthenticated" || err.code === "forbidden")
      ) return undefined;
      throw err;
    }
  }

  /**
   * What a caller's filter and sort may read of related entities: what
   * the caller could read of them itself (read as a GET of those records
   * would: no body, `req`'s query).
   */
  view(auth: AuthValue, req: RuleRequest): CallerView {
    const read = readRequest(req);
    return {
      req: read,
      decide: (target, op) => {
        const e = this.served(target);
        if (!e) return { kind: "none" };
        try {
          const d = authorize(e, op, auth);
          return d.kind === "allow"
            ? { kind: "all" }
            : { kind: "rule", expr: d.expr };
        } catch {
          return { kind: "none" }; // the rule mode refuses this caller
        }
      },
      access: (target, op) => {
        const e = this.served(target);
        return e
          ? this.readable(e, op, auth, read)
          : Promise.resolve(undefined);
      },
    };
  }

  /**
   * Runs a read by the schemas in memory while their version is checked
   * (PostgreSQL: `Registry.current`, alongside, so the read waits for no
   * extra round trip); when another instance had changed the entity, the
   * read runs again by its new schema and rules.
   */
  async read<T>(entity: Entity, run: (e: Entity) => Promise<T>): Promise<T> {
    const checked = this.registry.current();
    if (!checked) return await run(entity);
    const first = run(entity).then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    await checked;
    const got = await first;
    if (this.registry.get(entity.id) !== entity) {
      return await run(this.entity(entity.name));
    }
    if (!got.ok) throw got.error;
    return got.value;
  }

  /**
   * The entity to write by: after the version check (PostgreSQL, before
   * the write), the entity as now stored. Uploads (`uploaded`: the write
   * has some) were checked against the schema the request began with: when
   * it changed, 409 (send it again).
   */
  async writing(entity: Entity, uploaded = false): Promise<Entity> {
    const checked = this.registry.current();
    if (!checked) return entity;
    await checked;
    if (this.registry.get(entity.id) === entity) return entity;
    if (uploaded) {
      throw new MoonbaseError(
        "conflict",
        `Cannot save record: entity ${entity.name} changed while the request was sent; send it again`,
      );
    }
    return this.entity(entity.name);
  }
}
