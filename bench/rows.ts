/**
 * The benchmark's rows: what one measure gives, the names of the paired and
 * single-figure rows, and the scenarios in order.
 *
 * @module
 */

import type { LoadResult, Target } from "./load.ts";
import type { Seeded } from "./seed.ts";
import { ARTICLES, SEARCH_QUERY } from "./search_seed.ts";

/** The search scenario's name. */
export const SEARCH_SCENARIO = "search 100 000 records (relevance, 20)";

/** A measured scenario, a single figure, or a note where a figure would be. */
export type Row =
  | {
    db: string;
    name: string;
    moonbase: LoadResult;
    baseline: LoadResult;
    ratio: number;
  }
  | { db: string; name: string; value: number }
  | { db: string; name: string; text: string };

/** A measured row (Moonbase against its baseline). */
export type Measured = Extract<Row, { ratio: number }>;

/**
 * The paired logging row: GET by id with request logs on, in alternation with
 * a second server with them off ("baseline" is the logging-off server).
 */
export const LOGGING_PAIR = "GET by id: logging on ÷ off (paired)";

/**
 * The paired WebSocket row: GET by id on a server started `--websocket`
 * (upgrades served beside ordinary requests), in alternation with one
 * without (the "baseline"): ordinary requests cost the same either way.
 */
export const WEBSOCKET_PAIR = "GET by id: --websocket on ÷ off (paired)";

/** The sustained-load row: the last 5 s of 30 s ("baseline" is the first 5 s). */
export const SUSTAINED = "GET by id sustained 30 s: last ÷ first 5 s";

/**
 * The paired realtime row: GET by id on a server with realtime on and 1 000
 * idle SSE subscribers, in alternation with one started `--realtime off`
 * (the "baseline").
 */
export const REALTIME_PAIR =
  "GET by id: realtime on + 1 000 idle subscribers ÷ off (paired)";

/**
 * The paired workers row: GET by id on a server started `--workers N`, in
 * alternation with one started `--workers 1` (the "baseline").
 */
export const workersPair = (n: number): string =>
  `GET by id: --workers ${n} ÷ 1 (paired)`;

/** The idle memory row (MB). */
export const IDLE_RSS = "idle RSS (MB)";

/**
 * The row of the bare handler (bench/floor.ts, bench/floor_pg.ts) doing a
 * scenario's work.
 */
export const bareName = (scenario: string): string =>
  `bare handler: ${scenario}`;

/** The same with Moonbase's request log row written per request (logs on). */
export const bareLogName = (scenario: string): string =>
  `bare handler + log row: ${scenario}`;

/**
 * The bare handler doing a write's work with realtime on: the record's
 * statement plus its previous version and event row, in one transaction.
 */
export const bareEventName = (scenario: string): string =>
  `bare handler + event row: ${scenario}`;

/** The aggregate scenario: orders counted and summed per value of a select. */
export const AGGREGATE = "aggregate: group by select, count + sum";

/** The scenarios the bare handler also runs with the log row. */
export const LOGGED_BARE = [
  "health",
  "GET by id (public)",
  "GET by id (token + custom rule)",
];

/** The scenarios the PostgreSQL bare handler (bench/floor_pg.ts) runs. */
export const PG_BARE = [
  "health",
  "GET by id (public)",
  "GET by id (token + custom rule)",
  "list 50",
  "list filter + sort",
  SEARCH_SCENARIO,
  "create",
  "PATCH",
  AGGREGATE,
];

/** The expand scenarios: list 50 posts, plain and with their authors. */
export const POSTS = "list 50 posts";
export const POSTS_EXPAND = "list 50 posts, expand=author";
/** A back-relation: 20 authors with their 20 posts each. */
export const AUTHORS = "list 20 authors";
export const AUTHORS_BACK = "list 20 authors, expand=posts_via_author";
/** Ten creates in one batch (one request). */
export const BATCH = "batch: 10 creates";
/** A file served, and a thumbnail of it made before (cached). */
export const FILE = "file: original";
export const THUMB_FILE = "file: cached thumbnail 100x100";

/**
 * The paired S3 row: the same photo served by a Moonbase started
 * `--files s3://…` (a local RADOS Gateway, bench/s3_files.ts), in alternation
 * with the scenarios' Moonbase serving it from its data directory (the
 * "baseline").
 */
export const S3_PAIR = "file: S3 ÷ disk (paired)";
/** The bare handler's S3 scenario: one signed GET of the same object, streamed. */
export const S3_FILE = "file from S3";

/** What the scenarios need beyond the seeded data. */
export interface Extra {
  /** The stored name of the photo uploaded for the file scenarios. */
  photo: string;
}

/** The measured row of `name` on `db`, if there is one. */
export function measuredOf(
  rows: Row[],
  db: string,
  name: string,
): Measured | undefined {
  const r = rows.find((x) => x.db === db && x.name === name);
  return r && "ratio" in r ? r : undefined;
}

/** The scenarios, in order. */
export function scenarios(
  s: Seeded,
  token: string,
  page200: string,
  extra: Extra,
): { name: string; target: Target }[] {
  const json = { "content-type": "application/json" };
  const batch = JSON.stringify({
    requests: Array.from({ length: 10 }, (_, i) => ({
      method: "POST",
      url: "/api/v1/entities/items",
      body: { title: "bench", n: i, tag: "x" },
    })),
  });
  const file = `/api/files/photos/${extra.photo}`;
  return [
    { name: "health", target: { method: "GET", path: "/api/v1/health" } },
    {
      name: "GET by id (public)",
      target: { method: "GET", path: `/api/v1/entities/items/${s.itemId}` },
    },
    {
      name: "GET by id (token + custom rule)",
      target: {
        method: "GET",
        path: `/api/v1/entities/notes/${s.noteId}`,
        headers: { authorization: `Bearer ${token}` },
      },
    },
    {
      name: "list 50",
      target: { method: "GET", path: "/api/v1/entities/items?limit=50" },
    },
    {
      name: "list filter + sort",
      target: {
        method: "GET",
        path: `/api/v1/entities/items?limit=50&sort=-n&filter=${
          encodeURIComponent('n >= 2000 && n < 4000 && tag == "t3"')
        }`,
      },
    },
    {
      name: SEARCH_SCENARIO,
      target: {
        method: "GET",
        path: `/api/v1/entities/${ARTICLES}?limit=20&search=${
          encodeURIComponent(SEARCH_QUERY)
        }`,
      },
    },
    {
      name: "list page 200 (after)",
      target: {
        method: "GET",
        path: `/api/v1/entities/items?limit=50&after=${page200}`,
      },
    },
    {
      name: AGGREGATE,
      target: {
        method: "GET",
        path:
          "/api/v1/entities/orders/aggregate?group=status&count=true&sum=total",
      },
    },
    {
      name: POSTS,
      target: { method: "GET", path: "/api/v1/entities/posts?limit=50" },
    },
    {
      name: POSTS_EXPAND,
      target: {
        method: "GET",
        path: "/api/v1/entities/posts?limit=50&expand=author",
      },
    },
    {
      name: AUTHORS,
      target: { method: "GET", path: "/api/v1/entities/authors?limit=20" },
    },
    {
      name: AUTHORS_BACK,
      target: {
        method: "GET",
        path: "/api/v1/entities/authors?limit=20&expand=posts_via_author",
      },
    },
    { name: FILE, target: { method: "GET", path: file } },
    {
      name: THUMB_FILE,
      target: { method: "GET", path: `${file}?thumb=100x100` },
    },
    {
      name: "create",
      target: {
        method: "POST",
        path: "/api/v1/entities/items",
        headers: json,
        body: '{"title":"bench","n":1,"tag":"x"}',
      },
    },
    {
      name: "PATCH",
      target: {
        method: "PATCH",
        path: `/api/v1/entities/items/${s.itemId}`,
        headers: json,
        body: '{"n":5000}',
      },
    },
    {
      name: BATCH,
      target: {
        method: "POST",
        path: "/api/v1/batch",
        headers: json,
        body: batch,
      },
    },
    {
      name: "login",
      target: {
        method: "POST",
        path: "/api/v1/auth/users/login",
        headers: json,
        body: JSON.stringify({ identity: s.email, password: s.password }),
        spreadIps: true,
      },
    },
  ];
}
