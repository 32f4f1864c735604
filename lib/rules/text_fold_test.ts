/** The reference fold, words and rank of lib/rules/text_fold.ts. */
import assert from "node:assert/strict";
import {
  firstCodePoints,
  foldText,
  MAX_WORD_CHARS,
  searchRank,
  searchText,
  searchWords,
} from "./text_fold.ts";

Deno.test("text_fold: fold is per code point, then marks go", () => {
  const same: [string, string][] = [
    ["Straße", "STRASSE"],
    ["ΟΔΟΣ", "οδοσ"],
    ["ς", "σ"],
    ["İstanbul", "istanbul"],
    ["ıi", "II"],
    ["ﬁne", "FINE"],
    ["Émile", "emile"],
    ["E\u0301mile", "émile"],
    ["\u212b", "a"], // Angstrom sign
    ["\u212a", "k"], // Kelvin sign
    ["ǅ", "Ǆ"], // titlecase and uppercase digraphs fold to ǆ
  ];
  for (const [a, b] of same) assert.equal(foldText(a), foldText(b), a);
  // Hangul decomposes to jamo under NFD and composes back.
  assert.equal(foldText("한국어"), "한국어");
  assert.equal(foldText("\u1112\u1161\u11ab"), "한");
  assert.equal(foldText("😀"), "😀");
  assert.equal(foldText("abc XYZ"), "abc xyz");
});

Deno.test("text_fold: words, caps and rank", () => {
  assert.equal(searchText(null), null);
  assert.equal(searchText("It's 2024—x²!"), "it s 2024 x²");
  const long = "a".repeat(MAX_WORD_CHARS + 1);
  assert.equal(searchText(`${long} ok`), "ok", "long words are not indexed");
  assert.deepEqual(searchWords(`${long} ok`), [long, "ok"], "but searched");
  assert.equal(firstCodePoints("a😀b", 2), "a😀");
  assert.ok(searchRank("cat cat dog", ["ca"]) > searchRank("cat dog", ["ca"]));
  assert.ok(searchRank("cat", ["cat"]) > searchRank("cat dog bird", ["cat"]));
  assert.equal(searchRank("cat", ["dog", "cat"]) > 0, true);
});
