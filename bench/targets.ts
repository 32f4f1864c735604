/**
 * The performance targets: each goal (a ratio to the baseline measured in
 * the same run), its verdict, the bare handler doing the same work, and the
 * per-request CPU budget the goal implies (baseline CPU µs ÷ goal), as the
 * report's "Targets" table. Plus the figures asked for without a goal (a
 * file from S3 ÷ from disk) and the benchmark's own checks (sustained load,
 * deep pages, idle memory, errors).
 *
 * @module
 */

import {
  bareEventName,
  bareLogName,
  bareName,
  BATCH,
  FILE,
  IDLE_RSS,
  LOGGING_PAIR,
  measuredOf,
  POSTS,
  POSTS_EXPAND,
  REALTIME_PAIR,
  type Row,
  S3_FILE,
  S3_PAIR,
  SUSTAINED,
  THUMB_FILE,
  WEBSOCKET_PAIR,
} from "./rows.ts";

/** One ratio goal. */
export interface Goal {
  db: string;
  /** The row it reads. */
  name: string;
  /** The lowest ratio that meets it. */
  goal: number;
}

/** The goals, in the report's order. */
export const GOALS: Goal[] = [
  { db: "sqlite", name: "health", goal: 0.6 },
  { db: "sqlite", name: "GET by id (public)", goal: 0.5 },
  { db: "sqlite", name: "GET by id (token + custom rule)", goal: 0.4 },
  { db: "sqlite", name: "list 50", goal: 0.25 },
  { db: "sqlite", name: "list filter + sort", goal: 0.1 },
  { db: "sqlite", name: "create", goal: 0.3 },
  { db: "sqlite", name: "PATCH", goal: 0.3 },
  { db: "sqlite", name: LOGGING_PAIR, goal: 0.9 },
  { db: "sqlite", name: REALTIME_PAIR, goal: 0.9 },
  { db: "sqlite", name: WEBSOCKET_PAIR, goal: 0.9 },
  { db: "postgres", name: "health", goal: 0.6 },
  { db: "postgres", name: "GET by id (public)", goal: 0.2 },
  { db: "postgres", name: "GET by id (token + custom rule)", goal: 0.3 },
  { db: "postgres", name: "list 50", goal: 0.12 },
  { db: "postgres", name: "list filter + sort", goal: 0.1 },
  { db: "postgres", name: "create", goal: 0.05 },
];

/**
 * A goal on one row against another of the same run: `name`'s ratio times
 * `scale` ÷ `of`'s ratio at least `goal` (e.g. the records per second of a
 * batch of 10 against single creates: scale 10).
 */
export interface RelativeGoal {
  name: string;
  of: string;
  goal: number;
  scale?: number;
  /** Only on this database (default: both). */
  db?: string;
  /** How the report names it. */
  label: string;
}

/** The goals of one row against another. */
export const RELATIVE_GOALS: RelativeGoal[] = [
  {
    name: POSTS_EXPAND,
    of: POSTS,
    goal: 0.7,
    label: "list 50 with expand=author ÷ plain list 50",
  },
  {
    name: BATCH,
    of: "create",
    goal: 5,
    scale: 10,
    label: "batch of 10 creates: records/s ÷ single creates' records/s",
  },
  {
    name: THUMB_FILE,
    of: FILE,
    goal: 0.8,
    label: "cached thumbnail served ÷ original served",
  },
  {
    name: "GET by id (public)",
    of: bareLogName("GET by id (public)"),
    goal: 0.8,
    db: "sqlite",
    label: "GET by id ÷ bare handler + log row (same row, logging on)",
  },
  {
    name: "PATCH",
    of: bareEventName("PATCH"),
    goal: 1,
    db: "postgres",
    label: "PATCH ÷ bare handler + event row (the same statement)",
  },
];

/**
 * A figure the issue asks for with no goal: a paired row's ratio, shown in
 * the targets table (met: "–"), with the bare handler doing its work.
 */
export interface Figure {
  name: string;
  /** The bare handler's row beside it, if any. */
  bare?: string;
  /** How the report names it. */
  label: string;
}

/** The figures. */
export const FIGURES: Figure[] = [
  {
    name: S3_PAIR,
    bare: bareName(S3_FILE),
    label: "file served from S3 ÷ from disk (same photo)",
  },
];

/** One target's verdict. */
export interface Check {
  db: string;
  /** The row it reads (the profile's key with `db`). */
  name: string;
  goal: string;
  /** The measured value; "not measured" when the run skipped it. */
  got: string;
  ok: boolean;
  /** A ratio goal (its scenario can be profiled). */
  ratioGoal: boolean;
  /** A figure without a goal (`ok` is true: it is never missed). */
  figure?: boolean;
  /** A goal against another row: the scenario it profiles. */
  scenario?: string;
  /** The bare handler's ratio and CPU, when one was measured. */
  bare?: string;
  /** Moonbase's server CPU µs per request. */
  cpu?: number;
  /** The CPU µs per request the goal allows: baseline's ÷ goal. */
  budget?: number;
}

const f2 = (x: number) => x.toFixed(2);
/** A ratio, with a third digit below 0.1 (0.047 must not read as 0.05). */
const ratio = (x: number) => x.toFixed(x < 0.1 ? 3 : 2);
const us = (x?: number) => x === undefined ? "" : x.toFixed(1);

/** The goals on the databases measured (skipped rows read "not measured"). */
function goalChecks(rows: Row[], dbs: Set<string>): Check[] {
  return GOALS.filter((g) => dbs.has(g.db)).map((g) => {
    const m = measuredOf(rows, g.db, g.name);
    const bare = measuredOf(rows, g.db, bareName(g.name));
    const logged = measuredOf(rows, g.db, bareLogName(g.name)) ??
      measuredOf(rows, g.db, bareEventName(g.name));
    const extra = measuredOf(rows, g.db, bareLogName(g.name))
      ? "with the log row"
      : "with the event row";
    const base = m?.baseline.cpuPerRequest;
    const show = (r: typeof bare) =>
      r && `${ratio(r.ratio)} (${us(r.moonbase.cpuPerRequest)} µs)`;
    return {
      db: g.db,
      name: g.name,
      goal: `≥ ${g.goal}`,
      got: m ? ratio(m.ratio) : "not measured",
      ok: m !== undefined && m.ratio >= g.goal,
      ratioGoal: true,
      bare: bare &&
        (logged ? `${show(bare)}; ${extra} ${show(logged)}` : show(bare)),
      cpu: m?.moonbase.cpuPerRequest,
      budget: base === undefined ? undefined : base / g.goal,
    };
  });
}

/** The benchmark's own checks on one database, for the rows it has. */
function ownChecks(rows: Row[], db: string): Check[] {
  const out: Check[] = [];
  const own = (name: string, goal: string, got: string, ok: boolean) =>
    out.push({ db, name, goal, got, ok, ratioGoal: false });
  const steady = measuredOf(rows, db, SUSTAINED);
  if (steady) {
    own(SUSTAINED, "≥ 0.8", f2(steady.ratio), steady.ratio >= 0.8);
  }
  const p1 = measuredOf(rows, db, "list 50"),
    p200 = measuredOf(rows, db, "list page 200 (after)");
  if (p1 && p200 && db === "sqlite") {
    const r = p200.ratio / p1.ratio;
    own("list page 200 ÷ page 1", "≥ 0.8", f2(r), r >= 0.8);
  }
  for (const g of RELATIVE_GOALS) {
    if (g.db !== undefined && g.db !== db) continue;
    const a = measuredOf(rows, db, g.name), b = measuredOf(rows, db, g.of);
    if (!a || !b) continue;
    const r = a.ratio * (g.scale ?? 1) / b.ratio;
    out.push({
      db,
      name: g.label,
      goal: `≥ ${g.goal}`,
      got: f2(r),
      ok: r >= g.goal,
      ratioGoal: false,
      scenario: g.name,
    });
  }
  for (const f of FIGURES) {
    const m = measuredOf(rows, db, f.name);
    if (!m) continue;
    const bare = f.bare ? measuredOf(rows, db, f.bare) : undefined;
    out.push({
      db,
      name: f.label,
      goal: "none (a figure)",
      got: `${f2(m.ratio)} (${m.moonbase.rps.toFixed(0)} ÷ ${
        m.baseline.rps.toFixed(0)
      } req/s)`,
      ok: true,
      figure: true,
      ratioGoal: false,
      scenario: f.name,
      bare: bare &&
        `${bare.moonbase.rps.toFixed(0)} req/s (${
          us(bare.moonbase.cpuPerRequest)
        } µs)`,
      cpu: m.moonbase.cpuPerRequest,
    });
  }
  const rss = rows.find((r) => r.db === db && r.name === IDLE_RSS);
  if (rss && "value" in rss) {
    own("idle RSS", "< 100 MB", `${rss.value.toFixed(0)} MB`, rss.value < 100);
  }
  const measured = rows.filter((r) => r.db === db && "moonbase" in r);
  if (measured.length) {
    const bad = measured.filter((r) =>
      "moonbase" in r && (r.moonbase.errors > 0 || r.moonbase.non2xx > 0)
    );
    own(
      "errors and non-2xx",
      "0",
      bad.map((r) => r.name).join(", ") || "0",
      bad.length === 0,
    );
  }
  return out;
}

/** Every target and own check on the databases in `rows`. */
export function checks(rows: Row[]): Check[] {
  const dbs = new Set(rows.map((r) => r.db));
  return [
    ...goalChecks(rows, dbs),
    ...[...dbs].flatMap((db) => ownChecks(rows, db)),
  ];
}

/**
 * The ratio goals and goals against another row measured and missed: the
 * scenarios to profile (`scenario ?? name`).
 */
export function missed(rows: Row[]): Check[] {
  return checks(rows).filter((c) =>
    (c.ratioGoal || c.scenario) && !c.ok && c.got !== "not measured"
  );
}

/** True when every measured target holds. */
export function targetsMet(rows: Row[]): boolean {
  return checks(rows).every((c) => c.ok || c.got === "not measured");
}

/** The file name of a scenario's profile summary (under bench/profiles/). */
export function profileFile(db: string, name: string): string {
  const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, "_")
    .replace(/^_|_$/g, "");
  return `${db}_${slug}.md`;
}

/**
 * The "Targets" table. `profiles` holds the `db/name` keys whose profile
 * summary this run wrote (linked from the row).
 */
export function targetsTable(
  rows: Row[],
  profiles: Set<string> = new Set(),
): string {
  const lines = [
    "| db | target | goal (ratio) | measured | met | bare handler (its CPU) | server CPU µs/req | CPU budget µs/req | profile |",
    "|---|---|---:|---:|---|---:|---:|---:|---|",
  ];
  for (const c of checks(rows)) {
    const scenario = c.scenario ?? c.name;
    const key = `${c.db}/${scenario}`;
    const profile = profiles.has(key)
      ? `[profile](profiles/${profileFile(c.db, scenario)})`
      : "";
    lines.push(
      `| ${c.db} | ${c.name} | ${c.goal} | ${c.got} | ${
        c.figure ? "–" : c.ok ? "yes" : c.got === "not measured" ? "–" : "NO"
      } | ${c.bare ?? ""} | ${us(c.cpu)} | ${us(c.budget)} | ${profile} |`,
    );
  }
  return lines.join("\n");
}
