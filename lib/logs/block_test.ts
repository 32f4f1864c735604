import assert from "node:assert/strict";
import { chunkOf, type PackedRequest } from "./packed.ts";
import { decodeBlock, encodeBlock, MAX_BLOCK_ROWS } from "./block.ts";
import { logIdOf, type LogRow, rowEntry, unpackRequests } from "./rows.ts";

const ENTRIES: PackedRequest[] = [
  [
    1_700_000_000_000,
    5,
    2,
    "GET",
    "/api/v1/é/😀",
    200,
    1.25,
    "::1",
    null,
    null,
    "r-1",
  ],
  [
    1_700_000_000_000,
    6,
    3,
    "POST",
    "/x?y=1",
    404,
    0,
    null,
    "u1",
    "users",
    "r-2",
  ],
  [
    1_699_999_999_999,
    9,
    4,
    "GET",
    "/api/v1/é/😀",
    503,
    12345.67,
    "10.0.0.1",
    "u1",
    "users",
    "r-3",
  ],
  [
    1_700_000_000_002,
    1,
    2,
    "DELETE",
    "",
    204,
    0.01,
    "::1",
    "",
    "admins",
    "abc._-XYZ",
  ],
];

Deno.test("a block reads back exactly what rows would store", () => {
  const chunk = chunkOf(ENTRIES);
  const block = encodeBlock(chunk, "Tag123");
  assert.ok(block);
  assert.equal(block.rows, 4);
  assert.equal(block.lo, logIdOf(1_699_999_999_999, 9, "Tag123"));
  assert.equal(block.hi, logIdOf(1_700_000_000_002, 1, "Tag123"));
  const view = decodeBlock(block.data);
  assert.ok(view);
  const rows: LogRow[] = [];
  unpackRequests(chunkOf(ENTRIES), rows, "Tag123");
  assert.deepEqual(
    Array.from({ length: view.rows }, (_, i) => view.entry(i)),
    rows.map(rowEntry),
  );
});

Deno.test("repeated strings are stored once: ~40 bytes an entry", () => {
  const many = Array.from({ length: 500 }, (_, i) => {
    const e = ENTRIES[i % 4].slice() as PackedRequest;
    e[1] = i;
    e[10] = `5d1e09a2-${i.toString(36)}`;
    return e;
  });
  const block = encodeBlock(chunkOf(many), "Tag123")!;
  const perEntry = block.data.length / 500;
  assert.ok(perEntry < 48, `${perEntry} bytes an entry`);
});

Deno.test("a block at an unaligned offset is read from a copy", () => {
  const block = encodeBlock(chunkOf(ENTRIES), "Tag123")!;
  const shifted = new Uint8Array(block.data.length + 3);
  shifted.set(block.data, 3);
  const view = decodeBlock(shifted.subarray(3));
  assert.ok(view);
  assert.equal(view.entry(2).path, "/api/v1/é/😀");
  assert.equal(view.entry(2).duration_ms, 12345.67);
});

Deno.test("what cannot be a block is refused, for rows instead", () => {
  assert.equal(encodeBlock(chunkOf([]), "Tag123"), undefined);
  const long = ENTRIES[0].slice() as PackedRequest;
  long[10] = "r".repeat(255);
  assert.equal(encodeBlock(chunkOf([long]), "Tag123"), undefined);
  const wide = ENTRIES[0].slice() as PackedRequest;
  wide[10] = "ré";
  assert.equal(encodeBlock(chunkOf([wide]), "Tag123"), undefined);
  assert.equal(encodeBlock(chunkOf([ENTRIES[0]]), "bad tag"), undefined);
  const many = Array.from(
    { length: MAX_BLOCK_ROWS + 1 },
    () => ENTRIES[0],
  );
  assert.equal(encodeBlock(chunkOf(many), "Tag123"), undefined);
});

Deno.test("a damaged block is refused whole, never half-read", () => {
  const good = encodeBlock(chunkOf(ENTRIES), "Tag123")!.data;
  const damaged = (at: number, value: number) => {
    const d = good.slice();
    d[at] = value;
    return d;
  };
  for (
    const bad of [
      null,
      "text",
      new Uint8Array(0),
      good.subarray(0, good.length - 1),
      new Uint8Array([...good, 0]),
      damaged(0, 0), // magic
      damaged(4, 5), // rows
      damaged(8, 9), // dictionary count
      damaged(20, 0x2f), // tag
      damaged(39, 0xff), // first time: NaN
      damaged(32 + 4 * 8 + 8 * 4 + 4 * 2, 0x7f), // a reference past the dictionary
    ]
  ) {
    assert.equal(decodeBlock(bad), undefined);
  }
  assert.ok(decodeBlock(good));
  // A time with a fraction (an id no entry can have) and an unknown level.
  const fraction = good.slice();
  new DataView(fraction.buffer).setFloat64(32, 1_700_000_000_000.5, true);
  assert.equal(decodeBlock(fraction), undefined);
  assert.equal(decodeBlock(damaged(good.length - 1, 200)), undefined);
});

Deno.test("an unaligned Buffer is read from a copy", async () => {
  const { Buffer } = await import("node:buffer");
  const good = encodeBlock(chunkOf(ENTRIES), "Tag123")!.data;
  const pool = Buffer.alloc(good.length + 1);
  pool.set(good, 1);
  const view = decodeBlock(pool.subarray(1));
  assert.ok(view);
  assert.equal(view.entry(3).request_id, "abc._-XYZ");
});
