/**
 * Attack on per-row list scans that give the event loop a turn
 * (lib/records/list.ts `SLICE_MS`): other requests now write while a scan
 * is between two of its reads. A page sorted by `updated` (allowed under a
 * per-row rule) read its first rows, a PATCH of a shown row during a turn
 * gave it a later `updated`, and a later read of the same scan met it again:
 * the page held the record twice. A page must hold a record at most once.
 *
 * The rule calls a script helper; the server runs in this isolate, so the
 * helper and the test share a probe on `globalThis`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, insertSeries, padded } from "./_server.ts";
import { makeEntity, withScripts } from "./_extend_fixtures.ts";

interface Probe {
  fired: boolean;
  done: boolean;
  fire: () => void;
}

const KEY = "__mbListDuplicateProbe";
const ROWS = 1200; // more than one read of the scan (500 rows each)

const HELPER = `
export const helpers = {
  shown(value) {
    const p = globalThis.${KEY};
    if (value === "show" && !p.fired) {
      p.fired = true;
      p.fire();
    }
    // A costly check until the write is in: the scan spans many turns.
    if (!p.done) {
      const end = performance.now() + 0.2;
      while (performance.now() < end);
    }
    return value === "show";
  },
};
`;

forEachDb(
  "attack: a per-row page holds a record once though it moved during the scan",
  async (_t, db) => {
    await withScripts(db, { "shown.js": HELPER }, async (s) => {
      const custom = { mode: "custom", expr: "shown(record.body)" };
      await makeEntity(s, {
        name: "moving",
        fields: [{ name: "body", type: "text" }, { name: "n", type: "int" }],
        rules: {
          list: custom,
          get: custom,
          add: { mode: "", expr: "" },
          update: { mode: "", expr: "" },
          delete: { mode: "", expr: "" },
        },
      });
      // One shown row, first by (updated, id); the rest hidden.
      await insertSeries(s, "moving", ROWS, {
        id: padded("m", 6),
        body: {
          sqlite: "CASE WHEN i = 1 THEN 'show' ELSE 'hide' END",
          postgres: "CASE WHEN i = 1 THEN 'show' ELSE 'hide' END",
        },
      });
      const token = await s.adminToken();
      const { promise: patched, resolve } = Promise.withResolvers<number>();
      const probe: Probe = {
        fired: false,
        done: false,
        fire: () =>
          void s.request("PATCH", "/api/v1/entities/moving/m000001", {
            token,
            body: { n: 1 },
          }).then((r) => {
            probe.done = true;
            resolve(r.status);
          }),
      };
      (globalThis as Record<string, unknown>)[KEY] = probe;
      try {
        // A guest: the rule is checked row by row.
        const page = await s.request(
          "GET",
          "/api/v1/entities/moving?sort=updated&limit=10",
        );
        assert.equal(await patched, 200, "the row was changed mid-scan");
        assert.equal(page.status, 200, page.text);
        const ids = (page.data.items as { id: string }[]).map((r) => r.id);
        assert.deepEqual(ids, [...new Set(ids)], `no record twice: ${ids}`);
        assert.deepEqual(ids, ["m000001"]);
      } finally {
        delete (globalThis as Record<string, unknown>)[KEY];
      }
    });
  },
);
