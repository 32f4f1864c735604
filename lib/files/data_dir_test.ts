/**
 * Unit tests of the data directory's binding to a database's home: a copy
 * of a database (same id, another home) is refused; a marker from before
 * homes learns its database's home once.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { bindDataDir, databaseRef, MARKER } from "./data_dir.ts";

const ref = databaseRef("PSQL", "postgres://app@db.local/shop");
const ID = "0123456789abcdef";

async function marker(dir: string): Promise<Record<string, unknown>> {
  return JSON.parse(await Deno.readTextFile(join(dir, MARKER)));
}

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  return "";
}

Deno.test("data dir: a copy of its database (same id, another home) is refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mb_bind_" });
  try {
    assert.equal(
      await bindDataDir(dir, ref, ID, false, "pg:7/16384"),
      undefined,
    );
    assert.equal((await marker(dir)).home, "pg:7/16384");
    assert.equal(
      await bindDataDir(dir, ref, ID, false, "pg:7/16384"),
      undefined,
    );
    // The cluster's identifier unreadable to one role: the oid decides.
    assert.equal(
      await bindDataDir(dir, ref, ID, false, "pg:?/16384"),
      undefined,
    );
    for (const home of ["pg:7/20000", "pg:8/16384", "pg:?/20000"]) {
      const m = await refusal(bindDataDir(dir, ref, ID, false, home));
      assert.match(
        m,
        /^Cannot use data dir .*: it belongs to .* is a copy of it/,
      );
    }
    assert.equal((await marker(dir)).home, "pg:7/16384", "unchanged");
    assert.ok(await bindDataDir(dir, ref, ID, true, "pg:8/16384"));
    assert.equal((await marker(dir)).home, "pg:8/16384", "taken over");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("data dir: a marker from before homes learns its database's home once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mb_bind_" });
  try {
    assert.equal(await bindDataDir(dir, ref, ID, false), undefined);
    assert.equal((await marker(dir)).home, undefined);
    const bound = (await marker(dir)).bound;
    assert.equal(
      await bindDataDir(dir, ref, ID, false, "pg:7/16384"),
      undefined,
    );
    const m = await marker(dir);
    assert.equal(m.home, "pg:7/16384");
    assert.equal(m.bound, bound, "still bound since then");
    assert.match(
      await refusal(bindDataDir(dir, ref, ID, false, "pg:7/1")),
      /is a copy of it/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
