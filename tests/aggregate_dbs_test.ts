/**
 * Aggregates give the same answer on SQLite and PostgreSQL for the same
 * data: one server of each, seeded alike with thousands of rows whose
 * `created` times step across days, ISO weeks, months and years, lie on
 * UTC midnight and one millisecond before it; every ask is compared
 * between the two and with the answer computed in JavaScript from the
 * admin's list.
 *
 * @module
 */

import {
  DATABASES,
  insertSeries,
  startServer,
  type TestServer,
} from "./_server.ts";
import { eq, status } from "./_checks.ts";
import { allRules, createEntity } from "./_scenarios.ts";
import {
  type Ask,
  askQuery,
  listAll,
  reference,
} from "./_aggregate_fixtures.ts";

const ISO = {
  sqlite: (base: string, step: string) =>
    `strftime('%Y-%m-%dT%H:%M:%fZ', '${base}', ${step})`,
  postgres: (base: string, step: string) =>
    `to_char(timestamp '${base}' + ${step}, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
};

/** Seeds `events` alike on either database. */
async function seed(s: TestServer): Promise<void> {
  await createEntity(s, {
    name: "events",
    fields: [
      { name: "kind", type: "select", values: ["a", "b"] },
      { name: "flag", type: "bool" },
      { name: "n", type: "int" },
      { name: "x", type: "double" },
    ],
    rules: allRules("public"),
  });
  const common = {
    kind: "CASE i % 3 WHEN 0 THEN 'a' WHEN 1 THEN 'b' ELSE NULL END",
    flag: { sqlite: "i % 2", postgres: "i % 2 = 1" },
    n: "CASE WHEN i % 10 = 0 THEN NULL ELSE i * 7 - 5000 END",
    x: "CASE WHEN i % 11 = 0 THEN NULL ELSE i / 10.0 END",
  };
  const id = (p: string) => ({
    sqlite: `'${p}' || i`,
    postgres: `'${p}' || i`,
  });
  // Every 433 minutes for about 2.5 years.
  const at = (base: string, sqlite: string, postgres: string) => ({
    sqlite: ISO.sqlite(base, sqlite),
    postgres: ISO.postgres(base, postgres),
  });
  const t433 = at(
    "2023-12-24",
    "(i * 433) || ' minutes'",
    "i * interval '433 minutes'",
  );
  await insertSeries(s, "events", 3000, {
    ...common,
    id: id("s"),
    created: t433,
    updated: t433,
  });
  // Each midnight of 400 days, and the millisecond before each.
  const midnight = at("2024-12-20", "i || ' days'", "i * interval '1 day'");
  await insertSeries(s, "events", 400, {
    ...common,
    id: id("m"),
    created: midnight,
    updated: midnight,
  });
  const before = {
    sqlite:
      `strftime('%Y-%m-%dT%H:%M:%fZ', '2024-12-20', i || ' days', '-0.001 seconds')`,
    postgres: ISO.postgres(
      "2024-12-20",
      "i * interval '1 day' - interval '1 millisecond'",
    ),
  };
  await insertSeries(s, "events", 400, {
    ...common,
    id: id("p"),
    created: before,
    updated: before,
  });
}

const ASKS: Ask[] = [
  {
    count: true,
    sum: ["n", "x"],
    avg: ["n", "x"],
    min: ["n", "x", "created"],
    max: ["x", "created"],
  },
  { group: ["kind"], count: true, sum: ["n", "x"], avg: ["x"] },
  { group: ["flag"], count: true, avg: ["n"], min: ["x"], max: ["n"] },
  { group: ["created:day"], count: true, sum: ["x"] },
  { group: ["created:week"], count: true, sum: ["n"], max: ["created"] },
  { group: ["created:month"], count: true, avg: ["x"], min: ["created"] },
  { group: ["created:year"], count: true, sum: ["x"] },
  { group: ["kind", "created:month"], count: true },
  { group: ["kind", "flag", "created:year"], count: true, sum: ["x"] },
  { group: ["updated:week", "flag"], count: true },
];

Deno.test({
  name: "aggregate: the same groups on SQLite and PostgreSQL",
  ignore: !(DATABASES.includes("sqlite") && DATABASES.includes("postgres")),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const servers = [
      await startServer("sqlite"),
      await startServer("postgres"),
    ];
    try {
      await Promise.all(servers.map(seed));
      const [lite, pg] = servers;
      const all = await listAll(lite, "events", undefined);
      eq(all.length, 3800, "rows seeded");
      eq(
        JSON.stringify(
          (await listAll(pg, "events", undefined)).map((
            r,
          ) => [r.id, r.created, r.x]).sort(),
        ),
        JSON.stringify(all.map((r) => [r.id, r.created, r.x]).sort()),
        "the same rows",
      );
      for (const ask of ASKS) {
        await t.step(askQuery(ask), async () => {
          const q = `/api/v1/entities/events/aggregate?${askQuery(ask)}`;
          const [a, b] = await Promise.all(
            servers.map((s) => s.request("GET", q)),
          );
          status(a, 200, "sqlite");
          status(b, 200, "postgres");
          eq(b.data, a.data, "postgres as sqlite");
          eq(a.data, reference(all, ask), "as computed from the list");
        });
      }
    } finally {
      await Promise.all(servers.map((s) => s.close()));
    }
  },
});
