/**
 * The one definition of Moonbase's case- and accent-insensitive text:
 * `fold(x)` in rules and filters, `fold(<field>)` indexes, log search and
 * full-text search all use it, on both databases. SQLite runs these very
 * functions (registered on every connection, lib/db/sqlite_statements.ts);
 * PostgreSQL runs SQL functions built from them and checked against them at
 * start (lib/db/pg_text.ts).
 *
 * `fold(s)`: every code point mapped by its full case mapping to upper case
 * and then to lower case, context-free (so `ς` and `σ` fold alike, `ß` to
 * `ss`, `İ` to `i̇`, `ﬁ` to `fi`), then canonical decomposition (NFD), every
 * mark (`\p{M}`) removed, and canonical composition (NFC: Hangul stays
 * syllables). It is Unicode full case folding but for a few letters it
 * merges further (dotless `ı` folds to `i`, as Turkish readers expect when
 * searching), and it drops accents.
 *
 * Full-text search splits folded text into words: runs of letters and
 * digits (`\p{L}`, `\p{N}`); everything else separates them.
 *
 * @module
 */

import process from "node:process";

/**
 * What the text functions' results depend on: the runtime's Unicode
 * version. Stored in the database (`mb_meta` `text_version`); when a start
 * finds another one, what was computed with the old results (`fold(…)`
 * indexes, search indexes) is rebuilt.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { textVersion } from "moonbase/lib/rules/text_fold.ts";
 * assert.match(textVersion(), /^unicode /);
 * ```
 */
export function textVersion(): string {
  const v = process.versions as Record<string, string | undefined>;
  return `unicode ${v.unicode ?? `? (v8 ${v.v8})`}`;
}

/**
 * The case- and accent-insensitive form of `s` (see the module text).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { foldText } from "moonbase/lib/rules/text_fold.ts";
 * assert.equal(foldText("Émile"), "emile");
 * assert.equal(foldText("STRASSE"), foldText("Straße"));
 * assert.equal(foldText("ΟΔΟΣ"), foldText("οδος"));
 * assert.equal(foldText("İstanbul"), "istanbul");
 * assert.equal(foldText("ﬁne"), "fine");
 * assert.equal(foldText("한국어"), "한국어");
 * ```
 */
export function foldText(s: string): string {
  // toUpperCase has no context-dependent mapping; toLowerCase has one (a
  // final sigma becomes ς), which the replace undoes: the result is the
  // per-code-point mapping.
  let t = s.toUpperCase().toLowerCase();
  if (t.includes("ς")) t = t.replaceAll("ς", "σ");
  if (isAscii(t)) return t;
  return t.normalize("NFD").replace(/\p{M}+/gu, "").normalize("NFC");
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/**
 * The ranges of code points in the Unicode property class `cls` (the inside
 * of a `[…]`), as `[first, last]` pairs (surrogates excluded). Tested a
 * block of 256 code points at a time, one by one only in a block that is
 * neither all in nor all out: a string per code point for all 1.1 million
 * made ~100 MB of garbage at start, which grew the young generation (and
 * the idle server's memory) for good.
 */
const BLOCK = 256;
const blockCodes: number[] = new Array(BLOCK);

/**
 * The 256 code points from `first` (not a surrogate block) as one string,
 * made in one allocation.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { codePointBlock } from "moonbase/lib/rules/text_fold.ts";
 * assert.equal(codePointBlock(0x100).codePointAt(0), 0x100);
 * assert.equal([...codePointBlock(0x10000)].length, 256);
 * ```
 */
export function codePointBlock(first: number): string {
  for (let i = 0; i < BLOCK; i++) blockCodes[i] = first + i;
  return String.fromCodePoint(...blockCodes);
}

function rangesOf(cls: string): [number, number][] {
  const one = new RegExp(`^[${cls}]$`, "u");
  const any = new RegExp(`[${cls}]`, "u");
  const all = new RegExp(`^[${cls}]+$`, "u");
  const out: [number, number][] = [];
  let start = -1;
  const mark = (cp: number, hit: boolean) => {
    if (hit && start < 0) start = cp;
    if (!hit && start >= 0) {
      out.push([start, cp - 1]);
      start = -1;
    }
  };
  for (let block = 0; block < 0x110000; block += BLOCK) {
    if (block >= 0xd800 && block < 0xe000) {
      mark(block, false);
      continue;
    }
    const s = codePointBlock(block);
    if (!any.test(s)) mark(block, false);
    else if (all.test(s)) mark(block, true);
    else {
      for (let cp = block; cp < block + BLOCK; cp++) {
        mark(cp, one.test(String.fromCodePoint(cp)));
      }
    }
  }
  mark(0x110000, false);
  return out;
}

let marks: [number, number][] | undefined;
let letters: [number, number][] | undefined;

/**
 * The code point ranges of the marks `fold` removes (`\p{M}` of this
 * runtime), for building the same class in SQL.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { markRanges } from "moonbase/lib/rules/text_fold.ts";
 * assert.ok(markRanges().some(([a, b]) => a <= 0x301 && 0x301 <= b));
 * ```
 */
export function markRanges(): readonly [number, number][] {
  return marks ??= rangesOf("\\p{M}");
}

/**
 * The code point ranges of word characters (`\p{L}`, `\p{N}`) for full-text
 * search, for building the same class in SQL.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { wordRanges } from "moonbase/lib/rules/text_fold.ts";
 * assert.ok(wordRanges().some(([a, b]) => a <= 0x61 && 0x7a <= b));
 * ```
 */
export function wordRanges(): readonly [number, number][] {
  return letters ??= rangesOf("\\p{L}\\p{N}");
}

/** Most characters of a record's searchable text that are indexed. */
export const SEARCH_TEXT_CHARS = 100_000;
/** Longest word indexed or searched for (longer words are skipped). */
export const MAX_WORD_CHARS = 64;

/** The first `n` code points of `s`. */
export function firstCodePoints(s: string, n: number): string {
  if (s.length <= n) return s;
  let i = 0;
  for (let k = 0; k < n && i < s.length; k++) {
    const c = s.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length &&
        (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00
      ? 2
      : 1;
  }
  return s.slice(0, i);
}

const WORD = /[\p{L}\p{N}]+/gu;

/** The words of folded text (with `indexed`: at most MAX_WORD_CHARS code points each). */
function wordsOf(folded: string, indexed: boolean): string[] {
  const out: string[] = [];
  for (const m of folded.matchAll(WORD)) {
    const w = m[0];
    if (
      !indexed || w.length <= MAX_WORD_CHARS ||
      [...w].length <= MAX_WORD_CHARS
    ) out.push(w);
  }
  return out;
}

/**
 * A record's searchable text as indexed: its first
 * {@link SEARCH_TEXT_CHARS} code points folded, split into words, joined by
 * single spaces. `null` for `null`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { searchText } from "moonbase/lib/rules/text_fold.ts";
 * assert.equal(searchText("Crème brûlée, s'il-vous-plaît!"), "creme brulee s il vous plait");
 * ```
 */
export function searchText(s: string | null): string | null {
  if (s === null) return null;
  return wordsOf(foldText(firstCodePoints(s, SEARCH_TEXT_CHARS)), true).join(
    " ",
  );
}

/** Most words a search may have. */
export const MAX_SEARCH_WORDS = 16;

/**
 * The words of a `search` parameter, folded (the last one is matched as a
 * prefix by the callers). A word longer than the indexed ones is kept: it
 * matches nothing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { searchWords } from "moonbase/lib/rules/text_fold.ts";
 * assert.deepEqual(searchWords('"Émile" NEAR zo*'), ["emile", "near", "zo"]);
 * ```
 */
export function searchWords(q: string): string[] {
  return wordsOf(foldText(q), false);
}

/**
 * Relevance of a record's indexed text (from {@link searchText}) for the
 * words of a search: how often the words occur, relative to the text's
 * length. It reads the record alone, never other records, so rows a caller
 * cannot see never move the order of those they can.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { searchRank } from "moonbase/lib/rules/text_fold.ts";
 * assert.ok(searchRank("cat cat dog", ["cat"]) > searchRank("cat dog dog", ["cat"]));
 * assert.equal(searchRank("dog", ["cat"]), 0);
 * ```
 */
export function searchRank(text: string, words: readonly string[]): number {
  if (words.length === 0 || text === "") return 0;
  const last = words.length - 1;
  const counts = new Array<number>(words.length).fill(0);
  let n = 0;
  for (const token of text.split(" ")) {
    n++;
    for (let i = 0; i < words.length; i++) {
      if (i === last ? token.startsWith(words[i]) : token === words[i]) {
        counts[i]++;
      }
    }
  }
  let score = 0;
  for (const c of counts) score += Math.log1p(c);
  return score / Math.log2(n + 1);
}
