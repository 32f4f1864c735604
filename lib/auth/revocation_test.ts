import assert from "node:assert/strict";
import { join } from "node:path";
import { SqliteStorage } from "../db/sqlite.ts";
import { ensureSystemTables } from "../schema/system.ts";
import type { Storage } from "../db/storage.ts";
import { Revocations } from "./revocation.ts";
import type { TokenClaims } from "./jwt.ts";

const uuidAt = (ms: number) => {
  const hex = ms.toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8)}-7000-8000-000000000000`;
};
/** Claims of a token; `gen` undefined: a token from before generations. */
const claims = (jti: string, sub = "u1", gen?: number): TokenClaims => ({
  sub,
  entity: "users",
  jti,
  iat: 0,
  exp: 2 ** 31,
  ...(gen === undefined ? {} : { gen }),
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
    snapshot: (fn) => db.snapshot(fn),
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
      rev.isRevoked(claims(kept, "u1", 0)),
      true,
      "the old cutoff's kept token",
    );
    assert.equal(rev.isRevoked(claims(uuidAt(Date.now()), "u1", 1)), true);
    assert.equal(rev.isRevoked(claims(uuidAt(Date.now()), "u1", 2)), false);
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
    assert.equal(onB.isRevoked(claims(uuidAt(0), "u2", 0)), true, "cutoff");
    assert.equal(onB.isRevoked(claims(uuidAt(0), "u2", 1)), false, "after");
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
    const other = uuidAt(cutoff + 1); // not the jti revoked above
    rev.apply(JSON.stringify({ k: "users/u3", c: cutoff, p: "", g: 2 }));
    assert.equal(rev.isRevoked(claims(other, "u3", 1)), true);
    assert.equal(rev.isRevoked(claims(other, "u3", 2)), false);
    // An older cutoff arriving late does not move it back.
    rev.apply(JSON.stringify({ k: "users/u3", c: cutoff + 9, p: other, g: 1 }));
    assert.equal(rev.isRevoked(claims(other, "u3", 1)), true);
    rev.apply(JSON.stringify({ j: 1, e: "x" })); // malformed: ignored
    assert.throws(() => rev.apply("not json"));
  } finally {
    await db.close();
  }
});

Deno.test("revocation: a password change ends older generations, whatever the clocks say", async () => {
  const dir = await Deno.makeTempDir();
  const a = await open(join(dir, "db")), b = await open(join(dir, "db"));
  try {
    // B's clock runs an hour fast, A's an hour slow.
    const onA = new Revocations(a, () => Date.now() - 3_600_000);
    const onB = new Revocations(b, () => Date.now() + 3_600_000);
    await onA.start();
    await onB.start();
    const future = uuidAt(Date.now() + 7_200_000);
    const past = uuidAt(Date.now() - 7_200_000);
    assert.equal(onB.known("users", "u4"), 0);
    await onA.revokeUser("users", "u4");
    assert.equal(onA.known("users", "u4"), 1);
    // B has not polled: the database tells the generation to issue in.
    assert.equal((await onB.current("users", "u4"))?.gen, 1);
    for (const rev of [onA, onB]) {
      assert.equal(rev.isRevoked(claims(future, "u4", 0)), true, "older");
      assert.equal(rev.isRevoked(claims(past, "u4", 1)), false, "current");
    }
    await onB.revokeUser("users", "u4", past); // keeps the presented token
    await onA.poll();
    assert.equal(onA.known("users", "u4"), 2);
    assert.equal(onA.isRevoked(claims(past, "u4", 1)), false, "kept");
    assert.equal(onA.isRevoked(claims(future, "u4", 1)), true);
  } finally {
    await a.close();
    await b.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("revocation: tokens without a generation keep the time cutoff, and end at the next change", async () => {
  const db = await open();
  try {
    const rev = new Revocations(db);
    await rev.start();
    // A cutoff written before generations: gen 0, a time.
    const t = Date.now() - 60_000;
    await db.run(
      `INSERT INTO "mb_cutoffs" ("key", "cutoff", "keep_jti", "created", "seq") VALUES ('users/u5', ?, '', ?, 0)`,
      [t, t],
    );
    const fresh = new Revocations(db);
    await fresh.start();
    assert.equal(fresh.isRevoked(claims(uuidAt(t - 1), "u5")), true, "before");
    assert.equal(fresh.isRevoked(claims(uuidAt(t + 1), "u5")), false, "after");
    assert.equal(fresh.isRevoked(claims(uuidAt(t - 1), "u5", 0)), false);
    const kept = uuidAt(t + 2);
    await fresh.revokeUser("users", "u5", kept);
    const late = uuidAt(Date.now() + 3_600_000); // a clock far ahead
    assert.equal(fresh.isRevoked(claims(late, "u5")), true, "next change");
    assert.equal(fresh.isRevoked(claims(kept, "u5")), false, "kept");
    assert.equal(fresh.isRevoked(claims(late, "u5", 1)), false);
  } finally {
    await db.close();
  }
});
