import {
  deepStrictEqual as assertEquals,
  ok as assert,
} from "node:assert/strict";
import { MoonbaseError } from "../errors.ts";
import {
  MAX_JSON_DEPTH,
  mediaType,
  parseJson,
  readBytes,
  readJsonObject,
} from "./body.ts";

function req(
  body: BodyInit | null,
  headers: Record<string, string> = { "content-type": "application/json" },
): Request {
  return new Request("http://localhost/x", { method: "POST", body, headers });
}

function stream(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i < chunks.length) c.enqueue(enc.encode(chunks[i++]));
      else c.close();
    },
  });
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert(err instanceof MoonbaseError, `not a MoonbaseError: ${err}`);
    assert(err.message.length > 0);
    return err.code;
  }
  return "no error";
}

Deno.test("body: mediaType lower-cases and drops parameters", () => {
  assertEquals(
    mediaType(req("", { "content-type": "Application/JSON; charset=UTF-8" })),
    "application/json",
  );
  assertEquals(mediaType(req(null, {})), "");
});

Deno.test("body: a JSON object is read", async () => {
  assertEquals(await readJsonObject(req('{"title":"hi","n":[1,2]}'), 1024), {
    title: "hi",
    n: [1, 2],
  });
  assertEquals(
    await readJsonObject(
      req('{"a":1}', { "content-type": "application/json; charset=utf-8" }),
      1024,
    ),
    { a: 1 },
  );
  assertEquals(
    await readJsonObject(
      req('{"a":1}', { "content-type": "APPLICATION/JSON" }),
      1024,
    ),
    { a: 1 },
  );
  assertEquals(await readJsonObject(req("  {}  "), 1024), {});
  assertEquals(await readJsonObject(req('{"é":"🌙"}'), 1024), { "é": "🌙" });
  assertEquals(
    await readJsonObject(req(stream(['{"a"', ":", '"b"}'])), 1024),
    { a: "b" },
  );
});

Deno.test("body: 415 unsupported_media_type for other or missing types", async () => {
  for (
    const headers of <Record<string, string>[]> [
      {},
      { "content-type": "text/plain" },
      { "content-type": "application/x-www-form-urlencoded" },
      { "content-type": "multipart/form-data; boundary=x" },
      { "content-type": "application/jsonx" },
      { "content-type": "text/json" },
    ]
  ) {
    assertEquals(
      await code(readJsonObject(req('{"a":1}', headers), 1024)),
      "unsupported_media_type",
      JSON.stringify(headers),
    );
  }
});

Deno.test("body: 413 too_large from Content-Length, before reading", async () => {
  let pulled = false;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      pulled = true;
      c.enqueue(new TextEncoder().encode("{}"));
      c.close();
    },
  }, { highWaterMark: 0 });
  const r = req(body, {
    "content-type": "application/json",
    "content-length": "2048",
  });
  assertEquals(await code(readJsonObject(r, 1024)), "too_large");
  assertEquals(pulled, false, "the body was not read");
});

Deno.test("body: 413 too_large while streaming without Content-Length", async () => {
  const chunks = ['{"a":"', "x".repeat(600), "x".repeat(600), '"}'];
  assertEquals(
    await code(readJsonObject(req(stream(chunks)), 1024)),
    "too_large",
  );
  // A plain string body past the cap (its length is known) is also 413.
  assertEquals(
    await code(readJsonObject(req(`{"a":"${"x".repeat(2000)}"}`), 1024)),
    "too_large",
  );
});

Deno.test("body: a body of exactly max bytes is accepted", async () => {
  const text = `{"a":"${"x".repeat(100 - 8)}"}`;
  assertEquals(text.length, 100);
  assertEquals(Object.keys(await readJsonObject(req(text), 100)), ["a"]);
  assertEquals(await code(readJsonObject(req(text), 99)), "too_large");
  assertEquals((await readBytes(req(stream(["ab", "cd"])), 4)).length, 4);
  assertEquals(
    await code(readBytes(req(stream(["ab", "cde"])), 4)),
    "too_large",
  );
});

Deno.test("body: 400 invalid for malformed, empty or non-object JSON", async () => {
  const cases = [
    "",
    "   ",
    "{",
    "{'a':1}",
    '{"a":1,}',
    "undefined",
    "null",
    "42",
    '"text"',
    "true",
    "[]",
    '[{"a":1}]',
    '{"a":1} {"b":2}',
  ];
  for (const text of cases) {
    assertEquals(
      await code(readJsonObject(req(text), 1024)),
      "invalid",
      JSON.stringify(text),
    );
  }
  assertEquals(await code(readJsonObject(req(null), 1024)), "invalid");
});

Deno.test("body: 400 invalid for bytes that are not UTF-8", async () => {
  const bytes = new Uint8Array([
    0x7b,
    0x22,
    0x61,
    0x22,
    0x3a,
    0x22,
    0xff,
    0xfe,
    0x22,
    0x7d,
  ]);
  assertEquals(await code(readJsonObject(req(bytes), 1024)), "invalid");
});

Deno.test("body: nesting up to the limit passes, deeper is 400", async () => {
  assertEquals(MAX_JSON_DEPTH, 32);
  // {"a": [[...1...]]}: the object plus n arrays is n + 1 levels.
  const nested = (levels: number) =>
    `{"a":${"[".repeat(levels - 1)}1${"]".repeat(levels - 1)}}`;
  assert(await readJsonObject(req(nested(MAX_JSON_DEPTH)), 1 << 20));
  assertEquals(
    await code(readJsonObject(req(nested(MAX_JSON_DEPTH + 1)), 1 << 20)),
    "invalid",
  );
  assertEquals(
    await code(readJsonObject(req(nested(100_000)), 1 << 20)),
    "invalid",
  );
  const objects = (levels: number) =>
    '{"a":'.repeat(levels) + "1" + "}".repeat(levels);
  assertEquals(
    await code(readJsonObject(req(objects(MAX_JSON_DEPTH + 5)), 1 << 20)),
    "invalid",
  );
  assert(await readJsonObject(req(objects(10)), 1 << 20));
});

Deno.test("body: parseJson errors are MoonbaseError invalid", () => {
  let err: unknown;
  try {
    parseJson("{nope");
  } catch (e) {
    err = e;
  }
  assert(err instanceof MoonbaseError);
  assertEquals(err.code, "invalid");
  assertEquals(parseJson("[1,2]"), [1, 2]);
});
