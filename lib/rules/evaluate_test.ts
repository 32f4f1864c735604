import assert from "node:assert/strict";
import type { BinaryOperator } from "./ast.ts";
import {
  evaluate,
  MAX_STRING_LENGTH,
  RuleEvalError,
  type RuleHelpers,
  type RuleScope,
  test,
} from "./evaluate.ts";
import { parseExpression, type ParseOptions } from "./parser.ts";

const RULE: ParseOptions = { mode: "rule" };
const parse = (source: string, helpers?: RuleHelpers) =>
  parseExpression(source, { mode: "rule", helpers: new Set(helpers?.keys()) });
const run = (source: string, scope: RuleScope = {}, helpers?: RuleHelpers) =>
  evaluate(parse(source, helpers), scope, helpers);
const ok = (source: string, scope: RuleScope = {}, helpers?: RuleHelpers) =>
  test(parse(source, helpers), scope, helpers);

/** Native JavaScript operators, the reference for the evaluator. */
const NATIVE: Record<BinaryOperator, (a: unknown, b: unknown) => unknown> = {
  // deno-lint-ignore eqeqeq
  "==": (a, b) => a == b,
  // deno-lint-ignore eqeqeq
  "!=": (a, b) => a != b,
  "===": (a, b) => a === b,
  "!==": (a, b) => a !== b,
  "<": (a, b) => (a as number) < (b as number),
  "<=": (a, b) => (a as number) <= (b as number),
  ">": (a, b) => (a as number) > (b as number),
  ">=": (a, b) => (a as number) >= (b as number),
  "+": (a, b) => (a as number) + (b as number),
  "-": (a, b) => (a as number) - (b as number),
  "*": (a, b) => (a as number) * (b as number),
  "/": (a, b) => (a as number) / (b as number),
  "%": (a, b) => (a as number) % (b as number),
};

const VALUES: unknown[] = [
  ...[null, undefined, 0, -0, 1, -1.5, 5, NaN, Infinity, true, false],
  ..."|0|5| 5 |05|1e1|0x10|abc|B|a|é|😀|\uffff|null|true".split("|"),
  ...[[], [5], ["a", null, [1, 2]], {}, { a: 1 }],
];

Deno.test("evaluate: binary operators match native JavaScript on every pair", () => {
  let checked = 0;
  for (const op of Object.keys(NATIVE) as BinaryOperator[]) {
    const expr = parseExpression(`record.a ${op} record.b`, RULE);
    for (const a of VALUES) {
      for (const b of VALUES) {
        const expected = NATIVE[op](a, b);
        const actual = evaluate(expr, { record: { a, b } });
        assert.ok(
          Object.is(actual, expected),
          `${String(a)} ${op} ${String(b)}: ${actual} vs ${expected}`,
        );
        checked++;
      }
    }
  }
  assert.equal(checked, 13 * VALUES.length ** 2);
});

Deno.test("evaluate: unary operators, literals and arithmetic", () => {
  for (const v of VALUES) {
    assert.ok(
      Object.is(
        evaluate(parseExpression("!record.a", RULE), { record: { a: v } }),
        !v,
      ),
    );
    assert.ok(
      Object.is(
        evaluate(parseExpression("-record.a", RULE), { record: { a: v } }),
        -(v as number),
      ),
    );
  }
  assert.equal(run("1 + 2 * 3 - 4 / 2"), 5);
  assert.equal(run("7 % 3 + -7 % 3"), 0);
  assert.equal(run("1 / 0"), Infinity);
  assert.ok(Number.isNaN(run("0 / 0")));
  assert.equal(run("'a' + 1 + 2"), "a12");
  assert.equal(run("1 + 2 + 'a'"), "3a");
  assert.equal(run("'x' + null + undefined + true"), "xnullundefinedtrue");
  assert.equal(run("1e309 > 1"), true);
  assert.equal(run("'10' < '9'"), true);
  assert.equal(run("'10' < 9"), false);
  assert.equal(
    run("'\\uFFFF' < '\\u{1F600}'"),
    false,
    "UTF-16 code unit order",
  );
});

Deno.test("evaluate: && and || short-circuit and return operands", () => {
  const calls: unknown[] = [];
  const helpers: RuleHelpers = new Map([[
    "f",
    (x: unknown) => (calls.push(x), x),
  ]]);
  assert.equal(run("0 && f(1)", {}, helpers), 0);
  assert.equal(run("'' || f(2)", {}, helpers), 2);
  assert.equal(run("'a' || f(3)", {}, helpers), "a");
  assert.equal(run("null && f(4)", {}, helpers), null);
  assert.equal(run("1 && 'x'"), "x");
  assert.deepEqual(calls, [2]);
});

Deno.test("evaluate: member access reads own data only", () => {
  const record = {
    t: "hey",
    tags: ["a", "b"],
    nested: { x: { y: 1 } },
    n: null,
  };
  const scope = { record, auth: { id: "u1", user: null } };
  assert.equal(run("record.t.length", scope), 3);
  assert.equal(run("record.t[1]", scope), "e");
  assert.equal(run("record.t[5]", scope), undefined);
  assert.equal(run("record.tags.length", scope), 2);
  assert.equal(run("record.tags[1]", scope), "b");
  assert.equal(run("record['tags']['01']", scope), undefined);
  assert.equal(run("record.nested.x.y", scope), 1);
  assert.equal(run("record.n.x.y", scope), undefined, "no TypeError on null");
  assert.equal(run("auth.user.id", scope), undefined);
  assert.equal(run("record.t.toString", scope), undefined);
  assert.equal(run("record.tags.map", scope), undefined);
  assert.equal(run("auth.hasOwnProperty", scope), undefined);
  assert.equal(run("record.missing", scope), undefined);
  assert.equal(run("record.missing == null", scope), true);
  assert.equal(run("record.nested.x.y.z", scope), undefined);
});

Deno.test("evaluate: methods", () => {
  const scope = {
    record: { t: "Hello 😀", tags: ["a", 1, NaN, null], n: 5 },
    auth: { id: "a" },
  };
  assert.equal(run("record.t.includes('lo')", scope), true);
  assert.equal(run("record.t.startsWith('He')", scope), true);
  assert.equal(
    run("record.t.endsWith('\\uDE00')", scope),
    true,
    "UTF-16 semantics",
  );
  assert.equal(run("record.t.includes('x')", scope), false);
  assert.equal(run("record.tags.includes(auth.id)", scope), true);
  assert.equal(run("record.tags.includes('1')", scope), false, "SameValueZero");
  assert.equal(run("record.tags.includes(0 / 0)", scope), true);
  assert.equal(run("record.tags.includes(null)", scope), true);
  assert.equal(
    run("'null'.includes(null)", scope),
    true,
    "argument converted with ToString",
  );
  assert.equal(run("'a,b'.includes(record.tags)", scope), false);
  assert.equal(
    run("record.n.includes(5)", scope),
    undefined,
    "no TypeError: undefined",
  );
  assert.equal(run("record.missing.startsWith('a')", scope), undefined);
  assert.equal(run("record.tags.startsWith('a')", scope), undefined);
});

Deno.test("evaluate: filter mode reads bare fields from the scope", () => {
  const options: ParseOptions = {
    mode: "filter",
    fields: new Set(["title", "age", "req", "record"]),
  };
  const expr = parseExpression(
    "title == 'x' && age >= 18 && auth.id != '' && req == 1 && record == 2",
    options,
  );
  const auth = { id: "u" };
  const record = { title: "x", age: 20, req: 1, record: 2 };
  assert.equal(test(expr, { ...record, auth }), true);
  assert.equal(test(expr, { ...record, age: 2, auth }), false);
  assert.equal(test(expr, { auth, record }), false);
});

Deno.test("evaluate: helpers", () => {
  const helpers: RuleHelpers = new Map<string, (...args: unknown[]) => unknown>(
    [
      [
        "isOwner",
        (r, a) => (r as { owner: string }).owner === (a as { id: string }).id,
      ],
      ["boom", () => {
        throw new Error("boom");
      }],
      ["later", () => Promise.resolve(true)],
      ["thenable", () => ({
        then: () => true,
      })],
    ],
  );
  const scope = { record: { owner: "u1" }, auth: { id: "u1" } };
  assert.equal(ok("isOwner(record, auth)", scope, helpers), true);
  assert.equal(ok("boom() || true", scope, helpers), false);
  assert.throws(() => run("boom()", scope, helpers), RuleEvalError);
  assert.equal(
    ok("later()", scope, helpers),
    false,
    "async helpers never grant",
  );
  assert.equal(ok("thenable()", scope, helpers), false);
  // A helper the parser knew but the evaluator was not given.
  const expr = parseExpression("isOwner(record, auth)", {
    mode: "rule",
    helpers: new Set(["isOwner"]),
  });
  assert.equal(test(expr, scope), false);
  assert.throws(() => evaluate(expr, scope), RuleEvalError);
});

Deno.test("evaluate: conversions never run code from the data", () => {
  let called = false;
  const evil = {
    toString() {
      called = true;
      return "x";
    },
    valueOf() {
      called = true;
      return 1;
    },
  };
  const scope = {
    record: { evil, own: { toString: "nope" }, bare: Object.create(null) },
  };
  assert.equal(ok("record.evil == 'x'", scope), false);
  assert.equal(ok("record.evil + '' == 'x'", scope), false);
  assert.throws(
    () => run("record.own + ''", scope),
    RuleEvalError,
    "JS would throw too",
  );
  assert.throws(() => run("record.bare < 1", scope), RuleEvalError);
  assert.equal(run("record.bare == null", scope), false);
  assert.equal(called, false);
  assert.throws(
    () => run("record.d + ''", { record: { d: new Date(0) } }),
    RuleEvalError,
  );
  assert.equal(
    run("record.d.getTime", { record: { d: new Date(0) } }),
    undefined,
  );
});

Deno.test("evaluate: security", () => {
  // Getters on scope objects are not invoked.
  let invoked = 0;
  const auth = {
    get id() {
      invoked++;
      return "u1";
    },
  };
  const scope = {
    auth,
    req: { body: JSON.parse('{"__proto__": {"x": 1}, "y": 2}') },
    record: {},
  };
  assert.equal(ok("auth.id == 'u1'", scope), false);
  assert.equal(run("auth.id", scope), undefined);
  assert.equal(invoked, 0);
  // An own "__proto__" key of a JSON body is not a prototype: `x` stays unreachable.
  assert.equal(run("req.body.x", scope), undefined);
  assert.equal(run("req.body.y", scope), 2);
  // A getter on the scope itself is not invoked either.
  const sneaky = Object.defineProperty({}, "auth", {
    get: () => (invoked++, { id: "u1" }),
    enumerable: true,
  });
  assert.equal(ok("auth.id == 'u1'", sneaky), false);
  assert.equal(invoked, 0);
  // Inherited members are invisible.
  assert.equal(run("req.body.y.toFixed"), undefined);
  assert.equal(run("auth['toString']", { auth: {} }), undefined);
  // Functions placed in the scope are not visible as values.
  assert.equal(run("auth.fn", { auth: { fn: () => 1 } }), undefined);
  // Class instances are opaque.
  assert.equal(
    run("auth.map.size", { auth: { map: new Map([[1, 2]]) } }),
    undefined,
  );
  // Harmless numbers.
  assert.equal(ok("1e309 > 1"), true);
  // A throwing proxy in the scope means deny, not a crash.
  const trap = new Proxy({}, {
    getOwnPropertyDescriptor() {
      throw new Error("trap");
    },
  });
  assert.equal(ok("auth.id == 'x'", { auth: trap }), false);
});

Deno.test("evaluate: string growth is bounded", () => {
  // Literals alone are bounded by the source limit…
  assert.equal(
    run(Array(200).fill("'aaaaaaaaaa'").join("+")),
    "a".repeat(2000),
  );
  // …and data from the scope by the string cap.
  const s = "a".repeat(10_000);
  const source = Array(50).fill("req.body.s").join(" + ");
  assert.throws(() => run(source, { req: { body: { s } } }), RuleEvalError);
  assert.equal(ok(`${source} != ''`, { req: { body: { s } } }), false);
  const big = "b".repeat(MAX_STRING_LENGTH / 2 + 1);
  assert.equal(
    ok("req.body.s + req.body.s != ''", { req: { body: { s: big } } }),
    false,
  );
  assert.equal(run("req.body.s + ''", { req: { body: { s: big } } }), big);
  const wide = Array(MAX_STRING_LENGTH).fill("xx");
  assert.throws(() => run("auth.a + ''", { auth: { a: wide } }), RuleEvalError);
});
