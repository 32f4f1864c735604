/**
 * The search benchmark's data: `articles` (public list, a searchable `body`)
 * with 100 000 records of 20 words each from a 5 000-word vocabulary with
 * a Zipf-like spread (a common word is in thousands of records, a rare one
 * in a few), written with multi-row INSERTs, then made searchable through
 * the schema API (the search index is filled from the records, as for a
 * live entity). {@link SEARCH_QUERY} is what the scenario searches.
 *
 * @module
 */

import type { InternalApp } from "../lib/internal_app.ts";

/** The entity. */
export const ARTICLES = "articles";
/** Records seeded. */
export const ARTICLE_COUNT = 100_000;
/**
 * The scenario's search: a word in about 1 % of the records (vocabulary
 * word 200) and a prefix ("ri…", a tenth of the words).
 */
export const SEARCH_QUERY = "bakemo ri";

const SYLLABLES = ["ba", "ke", "mo", "ri", "su", "ta", "lo", "ne", "pa", "di"];

/** Word `i` of the vocabulary (`be`, `bemo`, …): distinct for 0 ≤ i < 5000. */
function word(i: number): string {
  let w = "";
  let n = i + 10;
  while (n > 0) {
    w += SYLLABLES[n % 10];
    n = Math.floor(n / 10);
  }
  return w;
}

/** A deterministic generator (xorshift). */
function random(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** Creates `articles`, fills it and turns its search on. */
export async function seedArticles(app: InternalApp): Promise<void> {
  const entity = await app.schemas.create({
    name: ARTICLES,
    type: "base",
    fields: [{ name: "body", type: "text" }],
    rules: { list: { mode: "public", expr: "" } },
  });
  const next = random(20260102);
  const now = new Date().toISOString();
  const ROWS = 500;
  for (let start = 0; start < ARTICLE_COUNT; start += ROWS) {
    const params: string[] = [];
    for (let i = start; i < Math.min(ARTICLE_COUNT, start + ROWS); i++) {
      const words = Array.from(
        { length: 20 },
        () => word(Math.floor(5000 * next() ** 3)),
      );
      params.push(crypto.randomUUID(), now, now, words.join(" "));
    }
    const values = Array.from(
      { length: params.length / 4 },
      () => "(?, ?, ?, ?)",
    )
      .join(", ");
    await app.storage.run(
      `INSERT INTO "${ARTICLES}" ("id", "created", "updated", "body") VALUES ${values}`,
      params,
    );
  }
  const body = entity.fields.find((f) => f.name === "body")!;
  await app.schemas.update(ARTICLES, {
    fields: [{ id: body.id, name: "body", type: "text", searchable: true }],
  });
}
