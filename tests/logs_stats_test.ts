/**
 * The dashboard's log endpoints: `GET /api/v1/sys/logs/stats` (request
 * counts per time bucket, computed in SQL on both databases) and
 * `GET /api/v1/sys/logs/:id` (one entry) — counts after known requests,
 * validation in words, admin only, 404 in words.
 *
 * @module
 */

import assert from "node:assert/strict";
import { userToken } from "./_scenarios.ts";
import { forEachDb, type Reply, startServer } from "./_server.ts";
import { logIdFloor } from "../lib/logs/rows.ts";
import type { LogEntry } from "../lib/logs/types.ts";
import { pause } from "./_wait.ts";

const STATS = "/api/v1/sys/logs/stats";

interface Bucket {
  time: string;
  requests: number;
  errors: number;
  warnings: number;
}

/** A stored request entry at `ms` answered `status` (made directly). */
function requestAt(ms: number, n: number, status: number): LogEntry {
  return {
    id: `${logIdFloor(ms)}-${n.toString(16).padStart(8, "0")}-tests0`,
    time: new Date(ms).toISOString(),
    level: status >= 500 ? "error" : status >= 400 ? "warn" : "info",
    type: "request",
    message: "",
    method: "GET",
    path: `/known/${n}`,
    status,
    duration_ms: 1.5,
    ip: "127.0.0.1",
    auth_id: null,
    auth_entity: null,
    request_id: `r${n}`,
    data: null,
  };
}

function stats(
  r: Reply,
): { from: string; to: string; bucket_seconds: number; buckets: Bucket[] } {
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(Object.keys(r.data).sort(), [
    "bucket_seconds",
    "buckets",
    "from",
    "to",
  ]);
  return r.data;
}

forEachDb(
  "logs stats: buckets, validation, admin only, entry by id",
  async (t, db) => {
    const s = await startServer(db);
    try {
      const token = await s.adminToken();
      const get = (path: string, tok: string | undefined = token) =>
        s.request("GET", path, { token: tok });

      await t.step("known entries land in their buckets", async () => {
        const base = Date.parse("2020-01-01T00:00:00.000Z");
        const entries = [
          requestAt(base + 5_000, 1, 200), // bucket 0
          requestAt(base + 59_999, 2, 404), // bucket 0
          requestAt(base + 60_000, 3, 500), // bucket 1
          requestAt(base + 125_000, 4, 200), // bucket 2
          requestAt(base + 125_001, 5, 503), // bucket 2
          requestAt(base + 125_002, 6, 401), // bucket 2
          requestAt(base + 600_000, 7, 200), // past the end: not counted
          {
            ...requestAt(base + 10_000, 8, 200),
            type: "app" as const,
            message: "an app entry is no request",
          },
        ];
        await s.app.logs.insert(entries);
        const d = stats(
          await get(
            `${STATS}?start_date=2020-01-01T00:00:00Z&end_date=2020-01-01T00:10:00Z&buckets=10`,
          ),
        );
        assert.equal(d.bucket_seconds, 60);
        assert.equal(d.from, "2020-01-01T00:00:00.000Z");
        assert.equal(d.to, "2020-01-01T00:10:00.000Z");
        assert.equal(d.buckets.length, 10);
        assert.equal(d.buckets[1].time, "2020-01-01T00:01:00.000Z");
        const counts = d.buckets.map((b) => [b.requests, b.errors, b.warnings]);
        assert.deepEqual(counts, [
          [2, 0, 1],
          [1, 1, 0],
          [3, 1, 1],
          ...Array.from({ length: 7 }, () => [0, 0, 0]),
        ]);
        // Fewer, wider buckets: the same totals, aligned to readable widths.
        const wide = stats(
          await get(
            `${STATS}?start_date=2020-01-01T00:00:00Z&end_date=2020-01-01T00:10:00Z&buckets=3`,
          ),
        );
        assert.equal(wide.bucket_seconds, 300);
        assert.equal(wide.buckets.length, 2);
        assert.deepEqual(wide.buckets.map((b) => b.requests), [6, 0]);
      });

      await t.step(
        "live requests are counted (default: the last hour)",
        async () => {
          for (let i = 0; i < 3; i++) await get("/api/v1/health", "");
          for (let i = 0; i < 2; i++) {
            assert.equal(
              (await get("/api/v1/no-such-route", "")).status,
              404,
            );
          }
          // A request's entry is queued once its response is sent: the
          // last one may trail the next request by a moment.
          const sum = (
            d: { buckets: Bucket[] },
            k: keyof Omit<Bucket, "time">,
          ) => d.buckets.reduce((n, b) => n + b[k], 0);
          let d = stats(await get(STATS));
          for (let i = 0; i < 40 && sum(d, "warnings") < 2; i++) {
            await pause(50);
            d = stats(await get(STATS));
          }
          assert.equal(d.bucket_seconds, 60);
          assert.equal(d.buckets.length, 60);
          const to = Date.parse(d.to);
          assert.ok(Math.abs(to - Date.now()) < 10_000, "ends now");
          assert.equal(to - Date.parse(d.from), 3_600_000, "covers an hour");
          assert.ok(sum(d, "requests") >= 5, `requests ${sum(d, "requests")}`);
          assert.equal(sum(d, "warnings"), 2);
          assert.equal(sum(d, "errors"), 0);
          // The 2020 entries are outside the last hour.
        },
      );

      await t.step("bad queries are refused in words", async () => {
        const cases: [string, RegExp][] = [
          ["buckets=0", /buckets must be a whole number from 1 to 200/],
          ["buckets=201", /buckets must be a whole number from 1 to 200/],
          ["buckets=ten", /buckets must be a whole number/],
          ["start_date=yesterday", /start_date must be an ISO 8601 date/],
          ["end_date=2020-13-45", /end_date must be an ISO 8601 date/],
          [
            "start_date=2020-01-02T00:00:00Z&end_date=2020-01-01T00:00:00Z",
            /start_date must be before end_date/,
          ],
          [
            "start_date=2020-01-01T00:00:00Z&end_date=2020-01-01T00:00:00Z",
            /start_date must be before end_date/,
          ],
          [
            "start_date=2000-01-01T00:00:00Z&end_date=2020-01-01T00:00:00Z",
            /at most 400 days/,
          ],
          ["limit=5", /unknown parameter "limit"/],
        ];
        for (const [qs, re] of cases) {
          const r = await get(`${STATS}?${qs}`);
          assert.equal(r.status, 400, qs);
          assert.match(r.error, /^Cannot count requests: /, qs);
          assert.match(r.error, re, qs);
        }
      });

      const user = (await userToken(s)).token;

      await t.step("stats are for admins only", async () => {
        const guest = await get(STATS, "");
        assert.equal(guest.status, 401);
        assert.equal(guest.data ?? null, null);
        const r = await get(STATS, user);
        assert.equal(r.status, 403);
        assert.equal(r.data ?? null, null);
      });

      await t.step("one entry by id", async () => {
        const list = await get("/api/v1/sys/logs?type=request&limit=5");
        assert.equal(list.status, 200);
        const first = list.data.items[0] as LogEntry;
        const r = await get(`/api/v1/sys/logs/${first.id}`);
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.data, first);
        // An app entry keeps its data.
        const app = await get("/api/v1/sys/logs?type=app&limit=1");
        const one = app.data.items[0] as LogEntry;
        assert.deepEqual((await get(`/api/v1/sys/logs/${one.id}`)).data, one);
        // A known stored request row comes back whole.
        const known = requestAt(Date.parse("2020-01-01T00:00:05Z"), 1, 200);
        const k = await get(`/api/v1/sys/logs/${known.id}`);
        assert.equal(k.status, 200, k.text);
        assert.equal(k.data.message, "GET /known/1 200");
        assert.equal(k.data.time, "2020-01-01T00:00:05.000Z");
        assert.equal(k.data.status, 200);
      });

      await t.step("a missing or malformed id is a 404 in words", async () => {
        for (
          const id of ["0190aaaaaaaa-00000001-zzzzzz", "nope", "%27%20OR%201=1"]
        ) {
          const r = await get(`/api/v1/sys/logs/${id}`);
          assert.equal(r.status, 404, id);
          assert.match(r.error, /^Cannot find log entry: no entry has this id/);
        }
      });

      await t.step("an entry is for admins only", async () => {
        const list = await get("/api/v1/sys/logs?limit=1");
        const id = list.data.items[0].id;
        assert.equal(
          (await get(`/api/v1/sys/logs/${id}`, "")).status,
          401,
        );
        const r = await get(`/api/v1/sys/logs/${id}`, user);
        assert.equal(r.status, 403);
        assert.equal(r.data ?? null, null);
      });

      await t.step(
        "health names the database kind, never its connection",
        async () => {
          const r = await get("/api/v1/health", "");
          assert.equal(r.data.database_kind, db);
          assert.ok(!/postgres(ql)?:\/\//.test(r.text));
          if (s.connection) assert.ok(!r.text.includes(s.connection));
        },
      );
    } finally {
      await s.close();
    }
  },
);
