import { assertEquals } from "../../tests/_server.ts";
import {
  REQUEST_ROW_SQL,
  requestParams,
  rowEntry,
  unpackRequests,
} from "./rows.ts";
import { chunkOf } from "./packed.ts";

const PACKED = chunkOf([
  [
    1_700_000_000_000,
    1,
    3,
    "POST",
    "/a",
    404,
    2.5,
    "10.0.0.1",
    "u1",
    "users",
    "r1",
  ],
  [1_700_000_000_001, 2, 2, "GET", "/b", 200, 0.5, "::1", null, null, "r2"],
]);

Deno.test("rows: one request row binds as many values as it has placeholders", () => {
  const params: unknown[] = [];
  requestParams(PACKED, "abcdef", (p) => params.push(...p));
  const marks = REQUEST_ROW_SQL.split("?").length - 1;
  assertEquals(params.length, 2 * marks);
});

Deno.test("rows: a row bound from requestParams reads as its unpacked entry", () => {
  const all: unknown[] = [];
  requestParams(PACKED, "abcdef", (p) => all.push(...p));
  const params = all.slice(10);
  const unpacked: (string | number | null)[][] = [];
  unpackRequests(PACKED, unpacked, "abcdef");
  // REQUEST_ROW_SQL: id, '', '', rank, 'request', '', then eight columns, NULL.
  const row = [
    params[0],
    "",
    "",
    params[1],
    "request",
    "",
    ...params.slice(2),
    null,
  ] as (string | number | null)[];
  assertEquals(row, unpacked[1]);
  assertEquals(rowEntry(row), {
    id: unpacked[1][0],
    time: "2023-11-14T22:13:20.001Z",
    level: "info",
    type: "request",
    message: "GET /b 200",
    method: "GET",
    path: "/b",
    status: 200,
    duration_ms: 0.5,
    ip: "::1",
    auth_id: null,
    auth_entity: null,
    request_id: "r2",
    data: null,
  });
});

Deno.test("rows: packed strings come back as they went in, in statements of at most `per` rows", () => {
  const odd = ["", "é", "日本", "\u{1F600}", "a".repeat(700), "\uFEFFbom"];
  const entries = Array.from({ length: 250 }, (_, i) =>
    [
      i,
      i,
      2,
      "GET",
      odd[i % odd.length],
      200,
      i / 4,
      i % 2 ? null : "::1",
      i % 3 ? null : odd[(i + 1) % odd.length],
      null,
      `r${i}`,
    ] as const);
  const sizes: number[] = [];
  const got: unknown[] = [];
  requestParams(chunkOf(entries.map((e) => [...e])), "abcdef", (p) => {
    sizes.push(p.length / 10);
    got.push(...p);
  });
  assertEquals(sizes, [100, 100, 50]);
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i], p = got.slice(i * 10, i * 10 + 10);
    assertEquals(p.slice(1), [
      2,
      "GET",
      e[4],
      200,
      i / 4,
      e[7],
      e[8],
      null,
      e[10],
    ]);
  }
});
