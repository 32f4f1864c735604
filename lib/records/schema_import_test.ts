/**
 * The import's plan, below HTTP: a cycle of relations becomes creates
 * without the closing field and an update that adds it; a field matched by
 * id is a rename, not a delete and a create; matching by id wins over the
 * name.
 *
 * @module
 */

import assert from "node:assert/strict";
import { planImport } from "./schema_import.ts";
import { adminOnlyRules, type EntitySchema } from "../schema/types.ts";

const rel = (name: string, entity: string, id?: string) => ({
  ...(id ? { id } : {}),
  name,
  type: "relation",
  foreign_key: { entity, on_delete: "set null" },
});

function stored(
  id: string,
  name: string,
  fields: EntitySchema["fields"],
): EntitySchema {
  return {
    id,
    name,
    type: "base",
    fields,
    indexes: [],
    view_query: "",
    rules: adminOnlyRules(),
    has_api: true,
    is_system: false,
    created: "",
    updated: "",
  };
}

Deno.test("a cycle: creates without the closing relation, then an update adding it", () => {
  const { changes, report } = planImport([], {
    schemas: [
      {
        name: "a",
        type: "base",
        fields: [rel("to_b", "b", "00000000000000aa")],
      },
      {
        name: "b",
        type: "base",
        fields: [rel("to_a", "a", "00000000000000bb")],
      },
    ],
    deleteMissing: false,
    dryRun: true,
  });
  assert.deepEqual(
    changes.map((c) =>
      c.action === "create"
        ? `create ${c.input.name} ${
          JSON.stringify((c.input.fields as { name: string }[]).map((f) =>
            f.name
          ))
        }`
        : c.action === "update"
        ? `update ${c.entity} ${
          JSON.stringify((c.input.fields as { name: string }[]).map((f) =>
            f.name
          ))
        }`
        : `delete ${c.entity}`
    ),
    ["create b []", 'create a ["to_b"]', 'update b ["to_a"]'],
  );
  // The report lists each entity once, with every field it will have.
  assert.deepEqual(
    report.map((r) => `${r.action} ${r.entity} ${r.details.map((d) => d.key)}`),
    ["create b fields.to_a", "create a fields.to_b"],
  );
});

Deno.test("a field matched by id is renamed; an entity matched by id is renamed", () => {
  const current = [
    stored("0190e5b2-0000-7000-8000-000000000001", "posts", [
      {
        id: "0000000000000001",
        name: "title",
        type: "string",
        required: false,
        unique: false,
      },
    ]),
  ];
  const { changes, report } = planImport(current, {
    schemas: [{
      id: "0190e5b2-0000-7000-8000-000000000001",
      name: "articles",
      type: "base",
      fields: [{ id: "0000000000000001", name: "heading", type: "string" }],
    }],
    deleteMissing: true,
    dryRun: true,
  });
  assert.deepEqual(report, [{
    entity: "articles",
    action: "update",
    details: [
      { key: "name", action: "update", from: "posts", to: "articles" },
      {
        key: "fields.title",
        action: "update",
        from: { name: "title" },
        to: { name: "heading" },
      },
    ],
  }]);
  const [update] = changes;
  assert.equal(update.action, "update");
  assert.deepEqual(
    update.action === "update" ? update.input.fields : undefined,
    [{
      id: "0000000000000001",
      name: "heading",
      type: "string",
      required: null,
      unique: null,
      default: null,
      index: null,
      min: null,
      max: null,
      pattern: null,
      searchable: null,
    }],
  );
});

Deno.test("turning searchable on is a change of the field", () => {
  const id = "0190e5b2-0000-7000-8000-000000000002";
  const title = {
    id: "0000000000000002",
    name: "title",
    type: "string" as const,
    required: false,
    unique: false,
  };
  const { report } = planImport([stored(id, "notes", [title])], {
    schemas: [{
      id,
      name: "notes",
      type: "base",
      fields: [{ ...title, searchable: true }],
    }],
    deleteMissing: false,
    dryRun: true,
  });
  assert.deepEqual(report[0]?.details, [{
    key: "fields.title",
    action: "update",
    from: { searchable: false },
    to: { searchable: true },
  }]);
});
