/**
 * The shared stream table counts exactly as the in-memory counts do,
 * through collisions of home slots and deletions in a small table, and two
 * isolates' views of one buffer agree.
 *
 * @module
 */

import assert from "node:assert/strict";
import { SharedStreamCounts, streamTableBytes } from "./stream_table.ts";
import { LocalStreamCounts } from "../realtime/stream_counts.ts";

Deno.test("stream table: random takes and gives agree with the in-memory counts", () => {
  const buffer = new SharedArrayBuffer(streamTableBytes(8)); // 64 slots
  const views = [
    new SharedStreamCounts(buffer),
    new SharedStreamCounts(buffer),
  ];
  const local = new LocalStreamCounts();
  let seed = 7;
  const rand = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 8) % n;
  };
  const held: string[][] = [];
  for (let step = 0; step < 20_000; step++) {
    const view = views[rand(2)];
    if (held.length > 0 && (rand(3) === 0 || held.length > 20)) {
      const keys = held.splice(rand(held.length), 1)[0];
      view.give(keys);
      local.give(keys);
      continue;
    }
    const quotas = [
      { key: "all", limit: 20 },
      { key: `address:${rand(12)}`, limit: 3 },
      { key: `user:${rand(30)}`, limit: 2 },
    ];
    const got = view.take(quotas);
    const want = local.take(quotas);
    assert.equal(got?.key, want?.key, `step ${step}`);
    if (!got) held.push(quotas.map((q) => q.key));
  }
  for (const keys of held) views[0].give(keys);
  // Everything given back: every key is below its limit again.
  for (let i = 0; i < 30; i++) {
    assert.equal(views[1].take([{ key: `user:${i}`, limit: 1 }]), undefined);
  }
});
