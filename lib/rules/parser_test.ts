import assert from "node:assert/strict";
import { type Expr, LIMITS, RuleSyntaxError } from "./ast.ts";
import { test } from "./evaluate.ts";
import { tokenize } from "./lexer.ts";
import {
  parseExpression,
  type ParseOptions,
  readsRecord,
  readsRequest,
} from "./parser.ts";

const RULE: ParseOptions = { mode: "rule" };
const FILTER: ParseOptions = {
  mode: "filter",
  fields: new Set(["title", "age", "req", "constructor"]),
};

/** Prints an AST back as fully parenthesized source, to check structure. */
function show(e: Expr): string {
  switch (e.type) {
    case "literal":
      return e.value === undefined ? "undefined" : JSON.stringify(e.value);
    case "root":
    case "field":
    case "param":
      return e.name;
    case "relation":
      return `${show(e.object)}->${e.key}`;
    case "quantifier":
      return `${show(e.object)}.${e.method}(${e.param} => ${show(e.body)})`;
    case "member":
      return `${show(e.object)}[${JSON.stringify(e.property)}]`;
    case "unary":
      return `(${e.operator}${show(e.argument)})`;
    case "binary":
    case "logical":
      return `(${show(e.left)} ${e.operator} ${show(e.right)})`;
    case "method":
      return `${show(e.object)}.${e.method}(${show(e.argument)})`;
    case "call":
      return `${e.name}(${e.args.map(show).join(", ")})`;
    case "textFunction":
      return e.name === "fold"
        ? `fold(${show(e.argument)})`
        : `${show(e.argument)}.${e.name}()`;
  }
}

function rejects(
  source: string,
  detail: string | RegExp,
  position?: number,
  options = RULE,
): void {
  try {
    parseExpression(source, options);
  } catch (e) {
    assert.ok(e instanceof RuleSyntaxError, `${source}: ${e}`);
    if (typeof detail === "string") assert.equal(e.detail, detail, source);
    else assert.match(e.detail, detail, source);
    if (position !== undefined) assert.equal(e.position, position, source);
    assert.equal(
      e.message,
      `Cannot parse ${options.mode}: ${e.detail} at ${e.position}`,
    );
    return;
  }
  assert.fail(`accepted: ${source}`);
}

Deno.test("parser: precedence and associativity follow JavaScript", () => {
  const cases: [string, string][] = [
    ["1 + 2 * 3", "(1 + (2 * 3))"],
    ["1 - 2 - 3", "((1 - 2) - 3)"],
    ["a", ""],
    ["!auth.x == false", '((!auth["x"]) == false)'],
    ["-auth.n * 2 < 3 === true", '((((-auth["n"]) * 2) < 3) === true)'],
    ["auth.a || auth.b && auth.c", '(auth["a"] || (auth["b"] && auth["c"]))'],
    ["(auth.a || auth.b) && auth.c", '((auth["a"] || auth["b"]) && auth["c"])'],
    ["1 < 2 == 3 > 4", "((1 < 2) == (3 > 4))"],
    ['record["a b"][0].length', 'record["a b"]["0"]["length"]'],
    ["req.body?.x?.['y']", 'req["body"]["x"]["y"]'],
    ["record.tags.includes(auth.id)", 'record["tags"].includes(auth["id"])'],
    ["!record.t.startsWith('a') % 2", '((!record["t"].startsWith("a")) % 2)'],
    ["null != undefined", "(null != undefined)"],
  ];
  for (const [source, expected] of cases) {
    if (expected === "") continue;
    assert.equal(show(parseExpression(source, RULE)), expected, source);
  }
});

Deno.test("parser: literals", () => {
  const value = (s: string) => {
    const e = parseExpression(s, RULE);
    assert.equal(e.type, "literal");
    return e.type === "literal" ? e.value : null;
  };
  assert.equal(value("12"), 12);
  assert.equal(value("1.5"), 1.5);
  assert.equal(value(".5"), 0.5);
  assert.equal(value("1e3"), 1000);
  assert.equal(value("1e309"), Infinity);
  assert.equal(
    value(String.raw`"a\n\t\"\'\\\u00e9\x41\u{1F600}\0"`),
    "a\n\t\"'\\éA😀\0",
  );
  assert.equal(value(String.raw`'it\'s'`), "it's");
  assert.equal(value("true"), true);
  assert.equal(value("null"), null);
  assert.equal(value("undefined"), undefined);
  rejects("01", "leading zero in number", 0);
  rejects("1e", "malformed number", 0);
  rejects("1x", 'unexpected "x"', 1);
  rejects("'abc", "unterminated string", 0);
  rejects("'a\nb'", "unterminated string", 0);
  rejects(String.raw`'\1'`, "octal escape sequences are not allowed", 1);
  rejects(String.raw`'\u12'`, "malformed escape sequence");
  rejects(String.raw`'\u{110000}'`, "malformed escape sequence");
});

Deno.test("parser: error messages carry the position", () => {
  rejects("auth.id == }", 'unexpected "}"', 11);
  rejects("auth.id ==", "unexpected end of expression", 10);
  rejects("", "unexpected end of expression", 0);
  rejects("(auth.id", "unexpected end of expression", 8);
  rejects("auth.id auth.id", 'unexpected "auth"', 8);
  rejects("auth.id = 1", 'unexpected "=" (to compare, write "==")', 8);
  rejects("record.x == 'a' ;", 'unexpected ";"', 16);
  // The first problem in source order is reported.
  rejects("globalThis = 1", 'unknown name "globalThis"', 0);
  rejects("auth.x = globalThis", 'unexpected "=" (to compare, write "==")', 7);
  rejects("title == 1", 'unknown name "title"', 0);
  rejects("title == nope", 'unknown name "nope"', 9, FILTER);
  assert.equal(tokenize("a == 'b'").at(-1)?.kind, "eof");
});

Deno.test("parser: rule and filter roots", () => {
  assert.equal(
    show(parseExpression("record.a == auth.id", RULE)),
    '(record["a"] == auth["id"])',
  );
  assert.equal(
    show(parseExpression("title == auth.id && age > 3", FILTER)),
    '((title == auth["id"]) && (age > 3))',
  );
  // In filter mode `req` is only a field when the schema has one.
  assert.equal(parseExpression("req", FILTER).type, "field");
  rejects("record.title", 'unknown name "record"', 0, FILTER);
  rejects("req.body", 'unknown name "req"', 0, {
    mode: "filter",
    fields: new Set(),
  });
  // A field name that could reach internals is never a bare name.
  rejects("constructor", 'unknown name "constructor"', 0, FILTER);
});

Deno.test("parser: methods and helpers", () => {
  const helpers = new Set(["isOwner", "now"]);
  const e = parseExpression("isOwner(record.owner, auth.id) && now() > 0", {
    mode: "rule",
    helpers,
  });
  assert.equal(
    show(e),
    '(isOwner(record["owner"], auth["id"]) && (now() > 0))',
  );
  rejects("isOwner(1)", 'unknown function "isOwner"', 0);
  rejects(
    "record.t.toLocaleUpperCase()",
    'unknown method "toLocaleUpperCase"',
    9,
  );
  assert.equal(
    show(parseExpression("fold(record.t.toUpperCase()).toLowerCase()", RULE)),
    'fold(record["t"].toUpperCase()).toLowerCase()',
  );
  rejects("record.t.toUpperCase(1)", "toUpperCase() takes no argument", 21);
  rejects("fold()", "fold() needs one argument", 4);
  rejects("fold(1, 2)", "fold() takes one argument", 6);
  rejects("record.t.includes()", "includes() needs one argument", 17);
  rejects("record.t.includes(1, 2)", "includes() takes one argument", 19);
  rejects('record.t["includes"]("a")', /^unexpected "\(": only helpers/, 20);
  rejects("(record.t)(1)", /^unexpected "\("/, 10);
  rejects(
    "record[auth.id]",
    "only a string or number literal may appear inside [ ]",
    7,
  );
  rejects("auth?.(1)", 'unexpected "("', 6);
});

Deno.test("parser: everything outside the safe subset is rejected", () => {
  const bad: [string, RegExp][] = [
    ['this.constructor.constructor("return process")()', /unknown name "this"/],
    ["auth.constructor", /forbidden property "constructor"/],
    ["auth.__proto__", /forbidden property "__proto__"/],
    ["auth.__defineGetter__", /forbidden property/],
    ["auth.prototype", /forbidden property/],
    ['record["constructor"]', /forbidden property "constructor"/],
    ['record["__proto__"]', /forbidden property/],
    ["req.body.__proto__.polluted", /forbidden property "__proto__"/],
    ['(0, eval)("1")', /unexpected ","/],
    ['import("x")', /unknown function "import"/],
    ["globalThis", /unknown name "globalThis"/],
    ["auth.id.constructor.constructor", /forbidden property "constructor"/],
    ["new Object()", /unknown name "new"/],
    ["Function('x')", /unknown function "Function"/],
    ["eval('1')", /unknown function "eval"/],
    ["typeof auth", /unknown name "typeof"/],
    ["auth.x = 1", /unexpected "="/],
    ["auth.x ? 1 : 2", /unexpected "\?"/],
    ["auth.x ?? 1", /unexpected "\?"/],
    ["`a${auth}`", /unexpected "`"/],
    ["/a/.test('a')", /unexpected "\/"/],
    ["(x) => 1", /unknown name "x"/],
    ["auth.n++", /unexpected "\+"/],
    ["'a' in auth", /unexpected "in"/],
    ["auth instanceof Object", /unexpected "instanceof"/],
    ["auth.x; 1", /unexpected ";"/],
    ["auth.x // comment", /unexpected "\/"/],
    ["auth.x & 1", /unexpected "&"/],
    ["auth.x ** 2", /unexpected "\*"/],
    ["[1, 2]", /unexpected "\["/],
    ["{}", /unexpected "\{"/],
    ["auth.π", /unexpected "π"/],
  ];
  for (const [source, detail] of bad) rejects(source, detail);
});

Deno.test("parser: limits", () => {
  rejects(
    `'${"a".repeat(10_000)}'`,
    /longer than 4096 characters/,
    LIMITS.maxSourceLength,
  );
  rejects(`'${"a".repeat(1025)}'`, /string literal longer than 1024/, 0);
  parseExpression(`'${"a".repeat(1024)}'`, RULE);
  rejects("(".repeat(100) + "1" + ")".repeat(100), /nested deeper than 32/, 32);
  parseExpression("(".repeat(32) + "1" + ")".repeat(32), RULE);
  rejects("!".repeat(40) + "1", /nested deeper than 32/);
  rejects(Array(300).fill("1").join(" + "), /more than 500 nodes/);
  parseExpression(Array(250).fill("1").join(" + "), RULE);
});

Deno.test("parser: readsRecord / readsRequest", () => {
  const p = (s: string, o = RULE) => parseExpression(s, o);
  assert.equal(readsRecord(p("record.a == 1")), true);
  assert.equal(readsRecord(p("auth.id == req.body.owner")), false);
  assert.equal(readsRecord(p("auth.x || 'a'.includes(record.a)")), true);
  assert.equal(readsRecord(p("title == 'x'", FILTER)), true);
  assert.equal(readsRecord(p("auth.id == 'x'", FILTER)), false);
  assert.equal(readsRequest(p("req.method == 'GET'")), true);
  assert.equal(readsRequest(p("record.a == auth.id")), false);
  assert.equal(
    readsRequest(p("f(req.body)", { mode: "rule", helpers: new Set(["f"]) })),
    true,
  );
});

Deno.test("security: hostile inputs are rejected or harmless", () => {
  const body = JSON.parse('{"__proto__": {"x": 1}}');
  const scope = { auth: { id: "u1" }, req: { body }, record: { id: "r" } };
  const hostile = [
    'this.constructor.constructor("return process")()',
    "auth.constructor",
    "auth.__proto__",
    'record["constructor"]',
    "req.body.__proto__.polluted",
    '(0, eval)("1")',
    'import("x")',
    "globalThis",
    "auth.id.constructor.constructor",
    "req.body.x", // own "__proto__" key: x is not inherited
    "req.body.x.constructor",
    "auth.toString",
    "auth.id.toString",
    "record.valueOf",
    `'${"a".repeat(10_000)}'`,
    "(".repeat(100) + "1" + ")".repeat(100),
  ];
  for (const source of hostile) {
    let accepted = false;
    try {
      const expr = parseExpression(source, RULE);
      accepted = true;
      assert.equal(test(expr, scope), false, source);
    } catch (e) {
      assert.ok(!accepted && e instanceof RuleSyntaxError, `${source}: ${e}`);
    }
  }
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(({} as Record<string, unknown>).x, undefined);
});

Deno.test("parser: .some and .every take one function", () => {
  const parse = (s: string) => show(parseExpression(s, RULE));
  assert.equal(
    parse("record.c_via_p.some(c => c.x == 1)"),
    'record["c_via_p"].some(c => (c["x"] == 1))',
  );
  assert.equal(
    parse("record.c_via_p.every((c) => c.d_via_c.some(d => d.y == c.x))"),
    'record["c_via_p"].every(c => c["d_via_c"].some(d => (d["y"] == c["x"])))',
  );
  // A parameter is known in its body only.
  rejects("record.a.some(c => 1) && c.x", 'unknown name "c"', 25);
  rejects("record.a.some(c)", /takes a function/, 15);
  rejects("record.a.some(1)", /takes a function/, 14);
  rejects("record.a.some(record => 1)", /cannot name the parameter/, 14);
  rejects("record.a.some(auth => 1)", /cannot name the parameter/, 14);
  rejects("record.a.some(c => 1, 2)", "some() takes one function", 20);
  rejects("record.a.every(__proto__ => 1)", /cannot name the parameter/, 15);
});
