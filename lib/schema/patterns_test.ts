/**
 * Field patterns: the linear-time engine agrees with JavaScript's `RegExp`
 * (`u` mode) on the syntax users write, and refuses what it cannot run.
 */
import assert from "node:assert/strict";
import {
  MAX_MATCHED_LENGTH,
  patternMismatch,
  patternProblem,
  resetPatternBudget,
} from "./patterns.ts";

// deno-fmt-ignore
const PATTERNS = [
  "^[a-z0-9_]+$", "^\\d{4}-\\d{2}-\\d{2}$", "^[A-Z][a-z]{1,5}$", "^(foo|bar)+baz?$", "colou?r",
  "^\\w+@\\w+\\.\\w{2,3}$", "\\bcat\\b", "\\Bat", "^.+$", "^[^]*$", "^[]$", "a.c", "^\\s*$", "^\\S+$",
  "^[\\s\\d]+$", "^[^\\s]+$", "[\\S]", "^[\\w-]+$", "^[a-]+$", "^[-a]+$", "^\\p{L}+$", "^\\P{L}+$",
  "^[\\p{Lu}\\d]+$", "^\\p{Script=Greek}+$", "^\\p{sc=Latin}+$", "^\\p{gc=Nd}+$", "\\u00e9", "\\u{1F600}",
  "\\ud83d\\ude00", "^[\\u{1F600}-\\u{1F64F}]$", "\\x41", "\\cJ", "[\\b]", "\\0", "\\t\\n\\v\\f\\r",
  "^\\/path\\/$", "\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\", "[\\-\\]\\\\\\^]", "[[]", "[a[:]", "^(?:ab)*$",
  "^(?<year>\\d{4})-(?<m>\\d\\d)$", "^a{2,}$", "^a{0,3}?$", "^(a|ab)(c|bcd)(d*)$", "^x*?y$", "😀+",
  "^[😀-😂]$", "é", "^$", "a|", "|", "^\\d*\\d*\\d*\\d*\\d*\\d*$", "^(\\w|\\d)*$", "^(a+)+$", "$^",
];
// deno-fmt-ignore
const INPUTS = [
  "", "a", "abc", "ABC", "a_b9", "2024-01-31", "Hello", "foofoobar", "foobarbaz", "color", "colour",
  "me@mail.com", "a cat sat", "concat", "bat", "line\nbreak", "cr\rx", "ls\u2028x", " \t\u00a0\u3000",
  "\ufeff", "x y", "a-b", "--", "αβγ", "Ωmega", "ÀÉ", "123", "٣", "é", "e\u0301", "😀", "😃", "😂x",
  "A", "\n", "\x08", "\0", "\t\n\v\f\r", "/path/", ".*+?()[]{}|^$\\", "-]\\^", "[", ":", "ab", "abab",
  "aa", "aaaa", "abcd", "abbcd", "xxy", "y", "abc\n", "a\nb", "😀😀", "1111111111111111111111111!", "a".repeat(30),
];

Deno.test("patterns: the engine agrees with RegExp(u) on every pattern and input", () => {
  for (const p of PATTERNS) {
    assert.equal(patternProblem(p), undefined, `refused: ${p}`);
    const native = new RegExp(p, "u");
    for (const s of INPUTS) {
      resetPatternBudget();
      assert.equal(
        patternMismatch(p, s) === undefined,
        native.test(s),
        `${JSON.stringify(p)} on ${JSON.stringify(s)}`,
      );
    }
  }
});

Deno.test("patterns: refused at save time with a reason", () => {
  const cases: [string, RegExp][] = [
    ["(a)\\1", /backreferences/],
    ["(?<n>a)\\k<n>", /backreferences/],
    ["a(?=b)", /lookahead and lookbehind/],
    ["a(?!b)", /lookahead and lookbehind/],
    ["(?<=a)b", /lookahead and lookbehind/],
    ["(?<!a)b", /lookahead and lookbehind/],
    ["(?i:a)", /inline modifiers/],
    ["\\ud800", /lone surrogates/],
    ["\\p{Script_Extensions=Greek}", /Unicode property/],
    ["(", /not a valid regular expression/],
    ["a{2,1}", /not a valid regular expression/],
    ["a{1001}", /linear-time engine/],
    ["(?:a{100}){20}", /linear-time engine|too complex/],
    ["[a-z]{1,900}[0-9]{1,900}", /too complex/],
    ["a".repeat(513), /longer than 512/],
    // Refused from the estimate, before the repeats are expanded.
    ["a{1000}".repeat(73), /too complex \(about 73000 /],
    ["(?:\\p{L}|\\d){1,1000}".repeat(20), /too complex/],
  ];
  for (const [p, why] of cases) {
    assert.match(patternProblem(p) ?? "accepted", why, p.slice(0, 40));
  }
});

Deno.test("patterns: work is bounded per value and per record", () => {
  const p = "^(\\w|\\d)*$";
  resetPatternBudget();
  const evil = "1".repeat(MAX_MATCHED_LENGTH - 1) + "!";
  // The linear engine answers, and JavaScript's backtracking one (about
  // 2^9999 steps on this value) never sees it: every native match goes
  // through RegExp.prototype.exec once that is replaced. No time bound
  // (timings belong to `deno task bench`).
  const exec = RegExp.prototype.exec;
  let native = 0;
  RegExp.prototype.exec = function (this: RegExp, s: string) {
    if (s === evil) native++;
    return exec.call(this, s);
  };
  try {
    assert.equal(
      patternMismatch(p, evil),
      "Does not match the required pattern",
    );
    assert.ok(/1!$/.test(evil), "the watch sees native matches");
  } finally {
    RegExp.prototype.exec = exec;
  }
  assert.equal(native, 1, "only the watch's own match was native");
  assert.match(patternMismatch(p, evil + "1") ?? "", /Too long/);
  // A record may check many values, up to its budget.
  resetPatternBudget();
  const big = "[a-z]{1,900}";
  let refused = 0;
  for (let i = 0; i < 20; i++) {
    if (/Too much text/.test(patternMismatch(big, "a".repeat(5000)) ?? "")) {
      refused++;
    }
  }
  assert.ok(refused > 0, "the record budget ends");
  resetPatternBudget();
  assert.equal(patternMismatch(big, "a".repeat(500)), undefined);
});
