/**
 * Which entities a caller meets in the API description, and with which
 * operations: each entity the records API serves, with the operations its
 * rules may open to the caller (`RecordService.opens`); entities with none
 * are left out, so the description names nothing the caller cannot use.
 *
 * @module
 */

import type { AuthValue } from "../caller.ts";
import type { Entity } from "../records/entity.ts";
import type { SharedReads } from "../records/rule_types.ts";
import { type Operation, OPERATIONS } from "../schema/types.ts";
import { RESERVED_NAMES } from "./common_schemas.ts";
import type { DescribedEntity } from "./entity_schemas.ts";
import { typeNames } from "./names.ts";

/** What the description reads of the record service. */
export interface EntityAccess {
  /** The entities the records API serves, in a stable order. */
  served(): Entity[];
  /**
   * Whether `op` on `entity` may be open to `auth` (a rule reading the
   * caller's relations: once `reads` read them).
   */
  opens(
    entity: Entity,
    op: Operation,
    auth: AuthValue,
    reads: SharedReads,
  ): boolean | Promise<boolean>;
  /** The related records the decisions of one description share. */
  sharedReads(): SharedReads;
}

/**
 * The entities `auth` may use, with their type names. The names are made
 * from these entities alone, so a name never tells of an entity the
 * caller does not see. Rules reading the caller's relations
 * (`auth.user.team.active == true`) are evaluated, their related records
 * read once for the whole description.
 */
export async function describedEntities(
  source: EntityAccess,
  auth: AuthValue,
): Promise<DescribedEntity[]> {
  const reads = source.sharedReads();
  const entities = source.served();
  // Every decision asked first: the reads they need go together.
  const decided = entities.map((entity) =>
    OPERATIONS.map((op) => source.opens(entity, op, auth, reads))
  );
  const shown: { entity: Entity; ops: Set<string> }[] = [];
  for (const [i, entity] of entities.entries()) {
    const ops = new Set<string>();
    for (const [k, op] of OPERATIONS.entries()) {
      if (await decided[i][k]) ops.add(op);
    }
    if (ops.size > 0) shown.push({ entity, ops });
  }
  return named(shown);
}

/**
 * Every entity of `served` with every operation it has (a view: list and
 * get): what an admin meets, and what `moonbase types` writes.
 */
export function allEntities(served: readonly Entity[]): DescribedEntity[] {
  return named(served.map((entity) => ({
    entity,
    ops: new Set<string>(
      entity.type === "view" ? ["list", "get"] : OPERATIONS,
    ),
  })));
}

function named(
  shown: readonly { entity: Entity; ops: Set<string> }[],
): DescribedEntity[] {
  const names = typeNames(shown.map((s) => s.entity.name), RESERVED_NAMES);
  return shown.map(({ entity, ops }) => ({
    name: entity.name,
    typeName: names.get(entity.name) ?? entity.name,
    schema: entity.schema,
    ops,
  }));
}
