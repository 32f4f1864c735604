import assert from "node:assert/strict";
import { Breaker, type BreakerTimes } from "./pg_breaker.ts";

const FAST: BreakerTimes = { stallMs: 20, probeMs: 20, retryMs: 20, tickMs: 5 };
const wait = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

Deno.test("breaker: a failed probe opens it once, a good one closes it", async () => {
  let up = false, opened = 0, probes = 0;
  const b = new Breaker({
    probe: () => (probes++, Promise.resolve(up)),
    stalled: () => false,
    onOpen: () => opened++,
  }, FAST);
  try {
    assert.equal(b.open, false);
    b.suspect();
    await wait(5);
    assert.equal(b.open, true);
    await wait(80); // it keeps probing while open, but opens only once
    assert.ok(probes >= 3, `probes: ${probes}`);
    assert.equal(opened, 1);
    up = true;
    await wait(60);
    assert.equal(b.open, false);
  } finally {
    b.stop();
  }
});

Deno.test("breaker: a stall that the probe answers (a slow query) keeps it closed", async () => {
  let probes = 0, opened = 0;
  const b = new Breaker({
    probe: () => (probes++, Promise.resolve(true)),
    stalled: () => true,
    onOpen: () => opened++,
  }, FAST);
  try {
    await wait(1200);
    assert.equal(b.open, false);
    assert.equal(opened, 0);
    // Probed, but at most about once a second while the stall lasts.
    assert.ok(probes >= 1 && probes <= 3, `probes: ${probes}`);
  } finally {
    b.stop();
  }
});

Deno.test("breaker: a stall the probe cannot answer opens it", async () => {
  let opened = 0;
  const b = new Breaker({
    probe: () => Promise.resolve(false),
    stalled: () => true,
    onOpen: () => opened++,
  }, FAST);
  try {
    await wait(60);
    assert.equal(b.open, true);
    assert.equal(opened, 1);
  } finally {
    b.stop();
  }
});
