/**
 * `GET /api/v1/openapi.json` names no entity the caller cannot use: not as
 * a path or a schema (tests/openapi_test.ts), and not as the target of a
 * relation field of an entity it can use. The document is made from the
 * schemas in memory: one database is enough.
 */

import { assert, assertEquals, assertStatus, startServer } from "./_server.ts";
import { fixtureAdmin } from "./_auth_fixtures.ts";

const PUBLIC = { mode: "public", expr: "" };

Deno.test("openapi: a relation does not name a target the caller cannot use", async () => {
  const s = await startServer("sqlite");
  try {
    const admin = await fixtureAdmin(s);
    for (
      const body of [
        {
          name: "payroll_audits",
          type: "base",
          fields: [{ name: "note", type: "string" }],
          rules: {},
        },
        {
          name: "articles",
          type: "base",
          fields: [{
            name: "checked_by",
            type: "relation",
            foreign_key: { entity: "payroll_audits", on_delete: "set null" },
          }, { name: "cover", type: "file" }],
          rules: { list: PUBLIC, get: PUBLIC, add: PUBLIC, update: PUBLIC },
        },
      ]
    ) {
      assertStatus(
        await s.request("POST", "/api/v1/schemas", { token: admin, body }),
        201,
        body.name,
      );
    }
    const guest = await (await fetch(`${s.url}/api/v1/openapi.json`)).json();
    const text = JSON.stringify(guest);
    assert(
      !text.toLowerCase().includes("payroll"),
      `a guest's document names payroll_audits: ${
        text.slice(text.toLowerCase().indexOf("payroll") - 200).slice(0, 400)
      }`,
    );
    const read = guest.components.schemas.Articles.properties.checked_by;
    assertEquals(read.description, "the id of a related record");
    const admins = await (await fetch(`${s.url}/api/v1/openapi.json`, {
      headers: { authorization: `Bearer ${admin}` },
    })).json();
    assertEquals(
      admins.components.schemas.ArticlesCreate.properties.checked_by[
        "x-moonbase-relation"
      ],
      "payroll_audits",
    );
  } finally {
    await s.close();
  }
});
