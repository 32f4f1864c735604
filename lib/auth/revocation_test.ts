import assert from "node:assert/strict";
import { join } from "node:path";
import { SqliteStorage } from "../db/sqlite.ts";
import { ensureSystemTables } from "../db/system.ts";
import type { Storage } from "../db/storage.ts";
import { Revocations } from "./revocation.ts";
import type { TokenClaims } from "./jwt.ts";

const uuidAt = (ms: number) => {
  const hex = ms.toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8)}-7000-8000-000000000000`;
};
const claims = (jti: string, sub = "u1"): TokenClaims => ({
  sub,
  entity: "users",
  jti,
  iat: 0,
  exp: 2 ** 31,
});

async function open(file = ":memory:"): Promise<SqliteStorage> {
  const db = new SqliteStorage(file);
  await ensureSystemTables(db);
  return db;
}

/** A storage whose cutoff reads wait for `release()` (they still read when they begin). */
function slowCutoffReads(db: Storage): { store: Storage; release(): void } {
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const store: Storage = {
    dialect: db.dialect,
    transaction: (fn) => db.transaction(fn),
    run: (sql, params) => db.run(sql, params),
    exec: (sql) => db.exec(sql),
    ping: () => db.ping(),
    state: () => db.state(),
    close: () => db.close(),
    query: async (sql, params) => {
      const rows = await db.query(sql, params);
      if (sql.includes(`FROM "mb_cutoffs"`)) await gate;
      return rows;
    },
  };
  return { store, release };
}

Deno.test("revocation: a poll that read older cutoffs does not undo a newer one", async () => {
  const db = await open();
  try {
    const first = new Revocations(db);
    await first.start();
    const kept = uuidAt(Date.now() - 1000);
    // An earlier password change kept `kept` alive.
    await first.revokeUser("users", "u1", kept);
    const { store, release } = slowCutoffReads(db);
    const rev = new Revocations(store);
    const polling = rev.poll(); // the first poll reads everything
    await new Promise((r) => setTimeout(r, 20)); // it has read the cutoffs
    await rev.revokeUser("users", "u1"); // a newer change keeps nothing
    release();
    await polling;
    assert.equal(
      rev.isRevoked(claims(kept)),
      true,
      "the old cutoff's kept token",
    );
    assert.equal(rev.isRevoked(claims(uuidAt(Date.now() - 100))), true);
    assert.equal(rev.isRevoked(claims(uuidAt(Date.now() + 1000))), false);
  } finally {
    await db.close();
  }
});

Deno.test("revocation: polls read by sequence, so a skewed clock cannot hide a revocation", async () => {
  const dir = await Deno.makeTempDir();
  const a = await open(join(dir, "db")), b = await open(join(dir, "db"));
  try {
    const onA = new Revocations(a), onB = new Revocations(b);
    await onA.start();
    await onB.start();
    await onB.poll(); // B has polled recently
    const jti = uuidAt(Date.now());
    await onA.revoke(claims(jti));
    await onA.revokeUser("users", "u2");
    // A's clock was an hour (or decades) behind: its rows say so.
    await a.run(`UPDATE "mb_revoked" SET "created" = 0`);
    await a.run(`UPDATE "mb_cutoffs" SET "created" = 0`);
    assert.equal(onB.isRevoked(claims(jti)), false, "not yet polled");
    await onB.poll();
    assert.equal(onB.isRevoked(claims(jti)), true, "jti");
    assert.equal(
      onB.isRevoked(claims(uuidAt(Date.now() - 10), "u2")),
      true,
      "cutoff",
    );
    // A fresh instance loads everything.
    const c = new Revocations(b);
    await c.start();
    assert.equal(c.isRevoked(claims(jti)), true, "loaded at start");
  } finally {
    await a.close();
    await b.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("revocation: notifications only add revocations", async () => {
  const db = await open();
  try {
    const rev = new Revocations(db);
    await rev.start();
    const jti = uuidAt(Date.now());
    rev.apply(JSON.stringify({ j: jti, e: 2 ** 31 }));
    assert.equal(rev.isRevoked(claims(jti)), true);
    const cutoff = Date.now();
    rev.apply(JSON.stringify({ k: "users/u3", c: cutoff, p: "" }));
    assert.equal(rev.isRevoked(claims(uuidAt(cutoff - 5), "u3")), true);
    // An older cutoff arriving late does not move it back.
    rev.apply(JSON.stringify({ k: "users/u3", c: cutoff - 1000, p: "" }));
    assert.equal(rev.isRevoked(claims(uuidAt(cutoff - 5), "u3")), true);
    rev.apply(JSON.stringify({ j: 1, e: "x" })); // malformed: ignored
    assert.throws(() => rev.apply("not json"));
  } finally {
    await db.close();
  }
});
