/**
 * The soak's verdict and its section in the report.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type Sample, soakSection, verdict, writeSoak } from "./soak_report.ts";

const samples = (rss: (i: number) => number, n = 60, every = 10): Sample[] =>
  Array.from({ length: n }, (_, i) => ({
    s: (i + 1) * every,
    requests: (i + 1) * 100,
    rps: 10,
    non2xx: 0,
    s5xx: 0,
    errors: 0,
    rss: rss(i),
  }));

Deno.test("soak verdict: a sawtooth levels off, a climb does not", () => {
  const saw = verdict(samples((i) => 150 + (i % 3) * 15));
  assert.equal(saw.window, 180);
  assert.equal(saw.spread, 30);
  assert.ok(saw.levelsOff);
  const climb = verdict(samples((i) => 100 + i));
  assert.equal(climb.levelsOff, false);
  assert.equal(climb.rise, 18);
});

Deno.test("soak verdict: a short run compares its last two thirds", () => {
  const v = verdict(samples((i) => (i < 4 ? 140 : 100), 12, 5));
  assert.equal(v.window, 20);
  assert.equal(v.rise, 0);
  assert.ok(v.levelsOff);
  const rising = verdict(samples((i) => (i < 8 ? 100 : 140), 12, 5));
  assert.equal(rising.levelsOff, false);
});

Deno.test("soak verdict: a new peak alone is a climb", () => {
  const v = verdict(samples((i) => (i === 59 ? 200 : 100)));
  assert.equal(v.peakRise, 100);
  assert.equal(v.levelsOff, false);
});

Deno.test("soak section: replaced per database, before the analysis", async () => {
  const path = await Deno.makeTempFile({ suffix: ".md" });
  try {
    await Deno.writeTextFile(
      path,
      "# R\n\n## How to read these figures\n\nx\n\n## History\n- a\n",
    );
    const run = {
      minutes: 1,
      connections: 2,
      interval: 2,
      idle: 80,
      date: "d",
    };
    const flat = samples(() => 90, 30, 2);
    await writeSoak(
      path,
      "sqlite",
      soakSection({ db: "sqlite", ...run }, flat),
    );
    await writeSoak(
      path,
      "postgres",
      soakSection({ db: "postgres", ...run }, flat),
    );
    const up = samples((i) => 90 + i * 2, 30, 2);
    await writeSoak(path, "sqlite", soakSection({ db: "sqlite", ...run }, up));
    const text = await Deno.readTextFile(path);
    assert.equal(text.match(/## Memory soak: sqlite/g)?.length, 1);
    assert.match(text, /## Memory soak: sqlite[\s\S]*Levels off: NO/);
    assert.match(text, /## Memory soak: postgres[\s\S]*Levels off: yes/);
    assert.match(text, /--pg --minutes 1/);
    assert.match(text, /mean \+0\.0 MiB, peak \+0\.0 MiB/);
    assert.match(text, /sampled every 2 s/);
    assert.ok(text.indexOf("soak:sqlite") < text.indexOf("## How to read"));
    assert.ok(text.endsWith("## History\n- a\n"));
    // At most 20 sample rows, the last one kept.
    const rows = text.split("soak:postgres:start")[1].match(/^\| \d+ s \|/gm);
    assert.equal(rows?.length, 20);
    assert.match(text, /\| 60 s \| 3000 \|/);
  } finally {
    await Deno.remove(path);
  }
});
