/**
 * The file backend contract: what lib/files/backend.ts promises, checked the
 * same way against every implementation (disk and S3). No app is started.
 *
 * `runFileBackendContract(name, open)` registers one test that opens a
 * backend and runs every case as a step; each step uses an entity id of its
 * own, so no step reads what another wrote. `open` also says where every
 * file of the backend is (`places`), so a case can check that nothing was
 * left, and nothing written outside the backend's directory or prefix.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { FileBackend } from "../lib/files/backend.ts";
import type { RangeAsked } from "../lib/files/byte_range.ts";
import {
  fileKey,
  storedName,
  tempName,
  thumbName,
} from "../lib/files/names.ts";

/** A backend to test, and a way to look at what it holds. */
export interface OpenedBackend {
  backend: FileBackend;
  /** The part size above which the backend writes in parts (0: none). */
  partSize: number;
  /**
   * Every file in the backend's space, as `<entity id>/<name>` relative to
   * its directory or prefix; `outside` lists anything found beyond it (a
   * sibling directory or prefix the test set up to watch).
   */
  places(): Promise<{ inside: string[]; outside: string[] }>;
  close(): Promise<void>;
}

interface Case {
  name: string;
  run(b: OpenedBackend, entityId: string): Promise<void>;
}

const enc = new TextEncoder();

async function* chunksOf(
  data: Uint8Array,
  size = 64 * 1024,
): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < data.length; i += size) {
    yield data.subarray(i, i + size);
  }
}

async function* failingAfter(
  data: Uint8Array,
  bytes: number,
): AsyncGenerator<Uint8Array> {
  let sent = 0;
  for await (const c of chunksOf(data)) {
    if (sent + c.length > bytes) throw new Error("the client went away");
    sent += c.length;
    yield c;
  }
}

/** Deterministic bytes that differ at every offset a part boundary could take. */
function pattern(size: number, seed = 7): Uint8Array {
  const out = new Uint8Array(size);
  let x = seed;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

async function bytesOf(
  s: ReadableStream<Uint8Array> | undefined,
): Promise<Uint8Array> {
  assert.ok(s, "a stream");
  return new Uint8Array(await new Response(s).arrayBuffer());
}

const cases: Case[] = [
  {
    name: "a file written is there: its size, time and bytes",
    async run({ backend }, e) {
      const name = storedName("hello.txt");
      const before = Date.now() - 2000;
      await backend.write(e, name, chunksOf(enc.encode("hello, world")));
      const info = await backend.stat(e, name);
      assert.equal(info?.size, 12);
      assert.ok(info!.modified.getTime() >= before, "modified is now");
      assert.equal(
        new TextDecoder().decode(await bytesOf(await backend.read(e, name))),
        "hello, world",
      );
    },
  },
  {
    name: "ranges: any start and end, the last byte, a single byte",
    async run({ backend }, e) {
      const name = storedName("r.bin");
      const data = pattern(100_000);
      await backend.write(e, name, chunksOf(data, 7000));
      for (
        const [start, end] of [[0, 0], [1, 9], [65_530, 65_545], [
          99_999,
          99_999,
        ], [0, 99_999]]
      ) {
        const got = await bytesOf(await backend.read(e, name, { start, end }));
        assert.deepEqual(got, data.subarray(start, end + 1), `${start}-${end}`);
      }
    },
  },
  {
    name: "open: size, time and bytes; a range as asked, cut to the size",
    async run({ backend }, e) {
      const name = storedName("o.bin");
      const data = pattern(100_000, 5);
      const when = new Date("2022-01-02T03:04:05.000Z");
      await backend.write(e, name, chunksOf(data, 7000), when);
      const whole = await backend.open(e, name);
      assert.equal(whole?.size, 100_000);
      assert.equal(whole?.modified.getTime(), when.getTime());
      assert.equal(whole?.range, undefined);
      assert.deepEqual(await bytesOf(whole?.body), data);
      const ranges: [RangeAsked, number, number][] = [
        [{ start: 0, end: 0 }, 0, 0],
        [{ start: 1, end: 9 }, 1, 9],
        [{ start: 65_530, end: 65_545 }, 65_530, 65_545],
        [{ start: 99_990 }, 99_990, 99_999],
        [{ start: 99_000, end: 1e21 }, 99_000, 99_999],
        [{ start: 5, end: 200_000 }, 5, 99_999],
        [{ suffix: 10 }, 99_990, 99_999],
        [{ suffix: 1e21 }, 0, 99_999],
        [{ suffix: 200_000 }, 0, 99_999],
      ];
      for (const [asked, start, end] of ranges) {
        const f = await backend.open(e, name, asked);
        const what = JSON.stringify(asked);
        assert.equal(f?.size, 100_000, what);
        assert.equal(f?.modified.getTime(), when.getTime(), what);
        assert.deepEqual(f?.range, { start, end }, what);
        assert.deepEqual(
          await bytesOf(f?.body),
          data.subarray(start, end + 1),
          what,
        );
      }
    },
  },
  {
    name: "open: a range that comes to no bytes gives the size and no body",
    async run({ backend }, e) {
      const name = storedName("n.txt");
      await backend.write(e, name, chunksOf(enc.encode("0123456789")));
      const empty = storedName("z.txt");
      await backend.write(e, empty, chunksOf(new Uint8Array(0)));
      const none: [string, RangeAsked][] = [
        [name, { start: 10 }],
        [name, { start: 1e21 }],
        [name, { start: 5, end: 3 }],
        [name, { suffix: 0 }],
        [empty, { start: 0 }],
        [empty, { suffix: 3 }],
      ];
      for (const [n, asked] of none) {
        const f = await backend.open(e, n, asked);
        const what = `${n} ${JSON.stringify(asked)}`;
        assert.equal(f?.size, n === name ? 10 : 0, what);
        assert.equal(f?.body, undefined, what);
        assert.equal(f?.range, undefined, what);
      }
      const whole = await backend.open(e, empty);
      assert.equal(whole?.size, 0);
      assert.equal((await bytesOf(whole?.body)).length, 0);
    },
  },
  {
    name: "open: a stream left unread is cancelled, and the file reads again",
    async run({ backend }, e) {
      const name = storedName("c.bin");
      const data = pattern(300_000, 11);
      await backend.write(e, name, chunksOf(data));
      for (let i = 0; i < 3; i++) {
        const f = await backend.open(e, name, { start: 10 });
        await f?.body?.cancel();
      }
      assert.deepEqual(
        await bytesOf((await backend.open(e, name, { suffix: 5 }))?.body),
        data.subarray(299_995),
      );
    },
  },
  {
    name: "a missing file: stat and read say undefined, remove says gone",
    async run({ backend }, e) {
      const name = storedName("none.png");
      assert.equal(await backend.stat(e, name), undefined);
      assert.equal(await backend.read(e, name), undefined);
      assert.equal(await backend.open(e, name), undefined);
      assert.equal(await backend.open(e, name, { suffix: 4 }), undefined);
      assert.equal(
        await backend.read(e, name, { start: 0, end: 3 }),
        undefined,
      );
      assert.equal(await backend.remove(e, name), true);
    },
  },
  {
    name: "an empty file",
    async run({ backend }, e) {
      const name = storedName("empty.txt");
      await backend.write(e, name, chunksOf(new Uint8Array(0)));
      assert.equal((await backend.stat(e, name))?.size, 0);
      assert.equal((await bytesOf(await backend.read(e, name))).length, 0);
    },
  },
  {
    name: "a file larger than a part goes in parts and comes back whole",
    async run({ backend, partSize }, e) {
      const size = Math.max(partSize, 1024 * 1024) * 2 + 12_345;
      const data = pattern(size, 3);
      const name = storedName("big.bin");
      await backend.write(e, name, chunksOf(data, 100_000));
      assert.equal((await backend.stat(e, name))?.size, size);
      assert.deepEqual(await bytesOf(await backend.read(e, name)), data);
      const start = (partSize || 1024 * 1024) - 5, end = start + 10;
      assert.deepEqual(
        await bytesOf(await backend.read(e, name, { start, end })),
        data.subarray(start, end + 1),
        "a range across a part boundary",
      );
    },
  },
  {
    name: "a source that fails leaves no file (small, and in parts)",
    async run(b, e) {
      const small = storedName("cut.txt");
      await assert.rejects(
        b.backend.write(e, small, failingAfter(pattern(200_000), 100_000)),
        /the client went away/,
      );
      assert.equal(await b.backend.stat(e, small), undefined);
      const big = storedName("cut.bin");
      const size = Math.max(b.partSize, 1024 * 1024) * 2;
      await assert.rejects(
        b.backend.write(e, big, failingAfter(pattern(size), size - 1000)),
        /the client went away/,
      );
      assert.equal(await b.backend.stat(e, big), undefined);
      const left = (await b.places()).inside.filter((p) =>
        p.startsWith(`${e}/`)
      );
      assert.deepEqual(left, [], "nothing of the entity is left");
    },
  },
  {
    name: "remove: the file goes, the others stay; twice is fine",
    async run({ backend }, e) {
      const a = storedName("a.txt"), b = storedName("b.txt");
      await backend.write(e, a, chunksOf(enc.encode("a")));
      await backend.write(e, b, chunksOf(enc.encode("b")));
      assert.equal(await backend.remove(e, a), true);
      assert.equal(await backend.stat(e, a), undefined);
      assert.equal(await backend.remove(e, a), true);
      assert.equal((await backend.stat(e, b))?.size, 1);
      await backend.removeEntity(e);
      assert.equal(
        (await backend.stat(e, b))?.size,
        1,
        "removeEntity keeps files",
      );
    },
  },
  {
    name: "modified: a copy keeps its time",
    async run({ backend }, e) {
      const name = storedName("old.txt");
      const when = new Date("2021-03-04T05:06:07.890Z");
      await backend.write(e, name, chunksOf(enc.encode("old")), when);
      assert.equal(
        (await backend.stat(e, name))?.modified.getTime(),
        when.getTime(),
      );
      const opened = await backend.open(e, name);
      await opened?.body?.cancel();
      assert.equal(
        opened?.modified.getTime(),
        when.getTime(),
        "open tells the same time",
      );
    },
  },
  {
    name: "put: a thumbnail is written whole, beside its original, again",
    async run(b, e) {
      const original = storedName("cat.png");
      await b.backend.write(e, original, chunksOf(enc.encode("original")));
      const thumb = thumbName(original, "100x100", "png");
      await b.backend.put(e, thumb, pattern(70_000), tempName(thumb));
      assert.equal((await b.backend.stat(e, thumb))?.size, 70_000);
      assert.deepEqual(
        await bytesOf(await b.backend.read(e, thumb)),
        pattern(70_000),
      );
      assert.deepEqual(
        await bytesOf(await b.backend.read(e, thumb, { start: 5, end: 9 })),
        pattern(70_000).subarray(5, 10),
      );
      // A second writer of the same thumbnail: the last write is the file.
      await b.backend.put(e, thumb, pattern(60_000, 9), tempName(thumb));
      assert.deepEqual(
        await bytesOf(await b.backend.read(e, thumb)),
        pattern(60_000, 9),
      );
      assert.deepEqual(
        (await b.places()).inside.filter((p) => p.startsWith(`${e}/`)).sort(),
        [`${e}/${original}`, `${e}/${thumb}`].sort(),
        "beside its original, no temporary file left",
      );
      assert.equal(await b.backend.remove(e, thumb), true);
      assert.equal(await b.backend.stat(e, thumb), undefined);
      assert.equal((await b.backend.stat(e, original))?.size, 8);
    },
  },
  {
    name: "places are built from an entity id and a stored name only",
    async run(b, e) {
      const bad: [string, string][] = [
        ["..", storedName("x.txt")],
        [`${e}/..`, storedName("x.txt")],
        ["a b", storedName("x.txt")],
        ["", storedName("x.txt")],
        [e, "../x_0123456789.txt"],
        [e, "..%2Fx_0123456789.txt"],
        [e, ".hidden_0123456789"],
        [e, "x_0123456789.txt/.."],
        [e, "a/b_0123456789.txt"],
        [e, "a\\b_0123456789.txt"],
        [e, ""],
        // A thumbnail's name only in full: no path in its original's part.
        [e, "../x_0123456789.png.100x100.thumb.png"],
        [e, "x_0123456789.png/../../y.100x100.thumb.png"],
        [e, "x_0123456789.png.100x100.thumb.png/.."],
        [e, "x_0123456789.png.100x100.thumb.exe"],
        [e, "../x_0123456789.png.tmp_0123456789"],
      ];
      for (const [id, name] of bad) {
        await assert.rejects(
          b.backend.write(id, name, chunksOf(enc.encode("x"))),
          /Cannot use/,
          `${id} ${name}`,
        );
        await assert.rejects(b.backend.stat(id, name), /Cannot use/);
        await assert.rejects(b.backend.read(id, name), /Cannot use/);
        await assert.rejects(b.backend.open(id, name), /Cannot use/);
        await assert.rejects(b.backend.remove(id, name), /Cannot use/);
        await assert.rejects(
          b.backend.put(id, name, enc.encode("x"), tempName(storedName("t"))),
          /Cannot use/,
        );
      }

      const { inside, outside } = await b.places();
      assert.deepEqual(outside, [], "nothing outside the store");
      for (const p of inside) {
        const [id, name] = p.split("/");
        assert.equal(fileKey(id, name), p, `a stored place: ${p}`);
      }
    },
  },
  {
    name: "state is ok while the store answers",
    run({ backend }) {
      assert.equal(backend.state(), "ok");
      return Promise.resolve();
    },
  },
];

/**
 * Registers the contract for one backend: `open` makes a fresh backend
 * (with whatever it runs on), `close` disposes of it.
 */
export function runFileBackendContract(
  name: string,
  open: () => Promise<OpenedBackend>,
  options: { ignore?: boolean } = {},
): void {
  Deno.test({
    name: `file backend contract: ${name}`,
    ignore: options.ignore,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn(t) {
      const b = await open();
      try {
        await b.backend.check();
        let n = 0;
        for (const c of cases) {
          const entityId = `e${++n}_${crypto.randomUUID().slice(0, 8)}`;
          await t.step(c.name, () => c.run(b, entityId));
        }
      } finally {
        await b.close();
      }
    },
  });
}
