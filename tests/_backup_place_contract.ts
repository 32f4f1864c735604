/**
 * The backup place contract: what lib/backup/place.ts promises, checked the
 * same way against every place (a folder and S3). No app is started.
 *
 * `runBackupPlaceContract(name, open)` registers one test that opens a
 * fresh place for each case (run as steps), so no case sees another's
 * backups. `open` also says what lies in the place's folder or under its
 * prefix (`entries`, temporary files and foreign objects included) and can
 * put something there as someone else would (`putForeign`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { MoonbaseError } from "../lib/errors.ts";
import type { BackupPlace } from "../lib/backup/place.ts";

/** A place to test, and a way to look at what it holds. */
export interface OpenedPlace {
  place: BackupPlace;
  /** The part size above which the place writes in parts (0: none). */
  partSize: number;
  /** Everything in the place's folder or under its prefix, relative to it, sorted. */
  entries(): Promise<string[]>;
  /** Puts bytes at `path` (relative to the place) as another program would. */
  putForeign(path: string, bytes: Uint8Array): Promise<void>;
  /** A directory for `local` copies. */
  tempDir: string;
  close(): Promise<void>;
}

interface Case {
  name: string;
  run(p: OpenedPlace): Promise<void>;
}

const OWNER = "db-0001";

/** Deterministic bytes that differ at every offset a part boundary could take. */
function pattern(size: number, seed = 11): Uint8Array {
  const out = new Uint8Array(size);
  let x = seed;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

/** A `fill` writing `data` in chunks, then closing `out`; returns `value`. */
function fillWith<T>(data: Uint8Array, value: T, chunk = 64 * 1024) {
  return async (out: WritableStream<Uint8Array>): Promise<T> => {
    const w = out.getWriter();
    for (let i = 0; i < data.length; i += chunk) {
      await w.write(data.slice(i, i + chunk));
    }
    await w.close();
    return value;
  };
}

/** A `fill` that writes `bytes` of `data` and then fails as a backup would. */
function failingAfter(data: Uint8Array, bytes: number) {
  return async (out: WritableStream<Uint8Array>): Promise<never> => {
    const w = out.getWriter();
    for (let i = 0; i < bytes; i += 64 * 1024) {
      await w.write(data.slice(i, Math.min(bytes, i + 64 * 1024)));
    }
    const err = new Error("the database went away");
    await w.abort(err);
    throw err;
  };
}

async function bytesOf(
  s: ReadableStream<Uint8Array> | undefined,
): Promise<Uint8Array> {
  assert.ok(s, "a stream");
  return new Uint8Array(await new Response(s).arrayBuffer());
}

async function assertNothingLeft(p: OpenedPlace, what: string): Promise<void> {
  assert.deepEqual(await p.entries(), [], `${what}: nothing left`);
  assert.deepEqual(await p.place.list(), [], `${what}: nothing listed`);
}

const cases: Case[] = [
  {
    name: "an empty place: nothing listed, nothing to read, remove is fine",
    async run(p) {
      assert.deepEqual(await p.place.list(), []);
      assert.equal(await p.place.stat("none.tar.gz"), undefined);
      assert.equal(await p.place.read("none.tar.gz"), undefined);
      assert.equal(await p.place.local("none.tar.gz", p.tempDir), undefined);
      await p.place.remove("none.tar.gz");
      assert.deepEqual(await p.entries(), []);
    },
  },
  {
    name: "a backup written is there: listed, its size, time and bytes",
    async run(p) {
      const data = pattern(100_000);
      const before = Date.now() - 2000;
      const got = await p.place.write("a.tar.gz", OWNER, fillWith(data, 42));
      assert.equal(got, 42, "write returns what fill returned");
      const info = await p.place.stat("a.tar.gz");
      assert.ok(info);
      assert.equal(info.name, "a.tar.gz");
      assert.equal(info.size, data.length);
      const created = Date.parse(info.created);
      assert.ok(created >= before && created <= Date.now() + 2000, "created");
      assert.deepEqual(await p.place.list(), [info]);
      assert.deepEqual(await bytesOf(await p.place.read("a.tar.gz")), data);
      assert.deepEqual(await p.entries(), ["a.tar.gz"]);
    },
  },
  {
    name: "an empty backup, and one larger than a part, come back whole",
    async run(p) {
      await p.place.write("empty.tar.gz", OWNER, fillWith(new Uint8Array(), 0));
      assert.equal((await p.place.stat("empty.tar.gz"))?.size, 0);
      const size = Math.max(p.partSize, 1024 * 1024) * 2 + 12_345;
      const data = pattern(size, 3);
      await p.place.write("big.tar.gz", OWNER, fillWith(data, 0, 100_000));
      assert.equal((await p.place.stat("big.tar.gz"))?.size, size);
      assert.deepEqual(await bytesOf(await p.place.read("big.tar.gz")), data);
    },
  },
  {
    name: "a fill that fails leaves no backup (small, and in parts)",
    async run(p) {
      const size = Math.max(p.partSize, 1024 * 1024) * 2 + 1;
      const data = pattern(size, 5);
      for (const cut of [1000, size - 10]) {
        await assert.rejects(
          p.place.write("cut.tar.gz", OWNER, failingAfter(data, cut)),
          /the database went away/,
        );
        await assertNothingLeft(p, `cut at ${cut}`);
      }
    },
  },
  {
    name: "a fill that fails after closing its stream leaves no backup",
    async run(p) {
      await assert.rejects(
        p.place.write("late.tar.gz", OWNER, async (out) => {
          await fillWith(pattern(1000), 0)(out);
          throw new Error("a check failed at the end");
        }),
        /a check failed at the end/,
      );
      await assertNothingLeft(p, "failed after close");
    },
  },
  {
    name: "a fill that fails without touching its stream leaves no backup",
    async run(p) {
      await assert.rejects(
        p.place.write("early.tar.gz", OWNER, () => {
          throw new MoonbaseError("invalid", "Cannot read backup: damaged");
        }),
        /damaged/,
      );
      await assertNothingLeft(p, "failed before writing");
    },
  },
  {
    name: "local: a file holding the backup; release removes only a copy",
    async run(p) {
      const data = pattern(300_000, 9);
      await p.place.write("r.tar.gz", OWNER, fillWith(data, 0));
      const before = await Array.fromAsync(Deno.readDir(p.tempDir));
      const local = await p.place.local("r.tar.gz", p.tempDir);
      assert.ok(local);
      assert.deepEqual(await Deno.readFile(local.path), data);
      // Read again: the same bytes (a restore reads it three times).
      assert.deepEqual(await Deno.readFile(local.path), data);
      await local.release();
      assert.deepEqual(
        (await Array.fromAsync(Deno.readDir(p.tempDir))).length,
        before.length,
        "no copy left in the temporary directory",
      );
      assert.deepEqual(await bytesOf(await p.place.read("r.tar.gz")), data);
    },
  },
  {
    name: "remove: that backup goes, the others stay",
    async run(p) {
      for (const n of ["x.tar.gz", "y.tar.gz"]) {
        await p.place.write(n, OWNER, fillWith(pattern(10), 0));
      }
      await p.place.remove("x.tar.gz");
      assert.deepEqual((await p.place.list()).map((b) => b.name), [
        "y.tar.gz",
      ]);
      await p.place.remove("x.tar.gz");
      assert.deepEqual(await p.entries(), ["y.tar.gz"]);
    },
  },
  {
    name: "what others put there is listed only when named as a backup",
    async run(p) {
      await p.place.write("ours.tar.gz", OWNER, fillWith(pattern(10), 0));
      const foreign = [
        "notes.txt",
        ".hidden.tar.gz",
        "half.tar.gz.1234abcd.partial",
        "deeper/inside.tar.gz",
        "theirs.tar.gz",
      ];
      for (const f of foreign) await p.putForeign(f, pattern(7));
      assert.deepEqual(
        (await p.place.list()).map((b) => b.name).sort(),
        ["ours.tar.gz", "theirs.tar.gz"],
      );
      assert.equal(await p.place.stat("notes.txt.tar.gz"), undefined);
      assert.deepEqual(
        await p.entries(),
        [...foreign, "ours.tar.gz"].sort(),
        "nothing of theirs removed",
      );
    },
  },
  {
    name: "madeBy: a backup written with an owner is that owner's",
    async run(p) {
      await p.place.write("m.tar.gz", OWNER, fillWith(pattern(10), 0));
      assert.equal(await p.place.madeBy("m.tar.gz", OWNER), true);
    },
  },
  {
    name: "state is ok while the place answers",
    async run(p) {
      await p.place.check();
      await p.place.list();
      assert.equal(p.place.state(), "ok");
    },
  },
];

/** Registers the contract's cases for one place. */
export function runBackupPlaceContract(
  name: string,
  open: () => Promise<OpenedPlace>,
  options: { ignore?: boolean; extra?: Case[] } = {},
): void {
  Deno.test({
    name: `backup place contract: ${name}`,
    ignore: options.ignore,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn(t) {
      for (const c of [...cases, ...options.extra ?? []]) {
        await t.step(c.name, async () => {
          const p = await open();
          try {
            await c.run(p);
          } finally {
            await p.close();
          }
        });
      }
    },
  });
}
