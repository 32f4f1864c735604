import { assertEquals } from "../../tests/_server.ts";
import {
  PACKED_FIELDS,
  REQUEST_ROW_SQL,
  requestParams,
  rowEntry,
  unpackRequests,
} from "./rows.ts";

const PACKED = [
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
  1_700_000_000_001,
  2,
  2,
  "GET",
  "/b",
  200,
  0.5,
  "::1",
  null,
  null,
  "r2",
];

Deno.test("rows: one request row binds as many values as it has placeholders", () => {
  const params: unknown[] = [];
  requestParams(PACKED, 0, 2, "abcdef", params);
  const marks = REQUEST_ROW_SQL.split("?").length - 1;
  assertEquals(params.length, 2 * marks);
  assertEquals(PACKED.length, 2 * PACKED_FIELDS);
});

Deno.test("rows: a row bound from requestParams reads as its unpacked entry", () => {
  const params: unknown[] = [];
  requestParams(PACKED, 1, 2, "abcdef", params);
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
