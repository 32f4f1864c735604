/**
 * Issue 28 item 7: a list checked row by row (a rule or filter not compiled
 * to SQL) over large rows held the event loop for the whole scan (four
 * guests looping such a list pushed health to 0.94 s on SQLite). The scan
 * now gives the event loop a turn every 20 ms (`SLICE_MS` of
 * lib/records/list.ts): another request is answered while the scan is still
 * running.
 *
 * The rule calls a script helper that counts the rows it is asked about;
 * the server runs in this isolate, so the test reads the count directly.
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, insertSeries, padded } from "./_server.ts";
import { makeEntity, withScripts } from "./_extend_fixtures.ts";

/** What the helper shares with the test (on `globalThis`). */
interface Probe {
  calls: number;
  started: () => void;
}

const KEY = "__mbListYieldProbe";
const ROWS = 3000;

const HELPER = `
export const helpers = {
  probe(value) {
    const p = globalThis.${KEY};
    if (p.calls++ === 0) p.started();
    // A costly check (~0.1 ms a row, as a long concatenation filter costs):
    // the scan lasts many of the list's time slices.
    const end = performance.now() + 0.1;
    while (performance.now() < end);
    return typeof value === "string" && value.length < 0; // never true
  },
};
`;

forEachDb(
  "lists: a per-row scan of large rows lets other requests through",
  async (_t, db) => {
    await withScripts(db, { "probe.js": HELPER }, async (s) => {
      const custom = { mode: "custom", expr: "probe(record.body)" };
      await makeEntity(s, {
        name: "big",
        fields: [{ name: "body", type: "text" }],
        rules: {
          list: custom,
          get: custom,
          add: { mode: "", expr: "" },
          update: { mode: "", expr: "" },
          delete: { mode: "", expr: "" },
        },
      });
      await insertSeries(s, "big", ROWS, { id: padded("b", 8), body: "?" }, [
        "x".repeat(8192),
      ]);
      const { promise: started, resolve } = Promise.withResolvers<void>();
      const probe: Probe = { calls: 0, started: resolve };
      (globalThis as Record<string, unknown>)[KEY] = probe;
      try {
        const heavy = s.request("GET", "/api/v1/entities/big?limit=10");
        // Without turns for the event loop, this resumes only once the scan
        // has ended: the health request below then starts after it.
        await started;
        const health = await s.request("GET", "/api/v1/health");
        const atHealth = probe.calls;
        const page = await heavy;
        assert.equal(health.status, 200, health.text);
        assert.equal(page.status, 200, page.text);
        assert.equal(page.data.items.length, 0, "the rule hides every row");
        assert.equal(probe.calls, ROWS, "every row was checked");
        assert.ok(
          atHealth < ROWS,
          `health answered while the scan ran (${atHealth} of ${ROWS} rows checked by then)`,
        );
      } finally {
        delete (globalThis as Record<string, unknown>)[KEY];
      }
    });
  },
);
