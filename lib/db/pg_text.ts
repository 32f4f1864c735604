/**
 * PostgreSQL's twins of the text functions of lib/rules/text_fold.ts:
 * `mb_lower`, `mb_upper` (JavaScript's `toLowerCase`/`toUpperCase`),
 * `mb_fold` (`fold`) and `mb_search_vector` (a record's searchable text as a
 * `tsvector`), created at start as IMMUTABLE SQL functions so indexes may
 * use them.
 *
 * Case mapping is ICU's root locale (`und-x-icu`): Unicode's default full
 * case mapping, as JavaScript's. The server's ICU and this runtime's may
 * know different Unicode versions; at start every code point whose case or
 * decomposition JavaScript changes is run through the SQL functions, and
 * each one that differs gets a fix (a `translate`/`replace` after the
 * mapping), so the functions give this runtime's results. The definitions
 * are replaced only when they change (then the indexes using them are
 * rebuilt), under an advisory lock: instances starting together agree.
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { Queryable, Storage } from "./storage.ts";
import {
  codePointBlock,
  foldText,
  markRanges,
  MAX_WORD_CHARS,
  SEARCH_TEXT_CHARS,
  textVersion,
  wordRanges,
} from "../rules/text_fold.ts";

/** Advisory lock key of the text functions' creation ("mbtext"). */
const LOCK = 0x6d6274657874;

/** A PostgreSQL string literal holding `s` exactly (`U&'…'` escapes). */
export function pgString(s: string): string {
  let out = "";
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (/^[A-Za-z0-9 ]$/.test(ch)) out += ch;
    else out += `\\+${cp.toString(16).padStart(6, "0")}`;
  }
  return `U&'${out}'`;
}

function charClass(ranges: readonly [number, number][]): string {
  let s = "";
  for (const [a, b] of ranges) {
    s += a === b
      ? String.fromCodePoint(a)
      : `${String.fromCodePoint(a)}-${String.fromCodePoint(b)}`;
  }
  return s;
}

/** Code points whose case mapping or decomposition JavaScript changes. */
let candidates: string[] | undefined;

/**
 * The code points whose case mapping or decomposition this runtime changes
 * (the ones checked against the server at start; tests check them too).
 */
export function changingChars(): string[] {
  if (candidates) return candidates;
  const out: string[] = [];
  const changes = (s: string) =>
    s.toLowerCase() !== s || s.toUpperCase() !== s || s.normalize("NFD") !== s;
  for (let block = 0; block < 0x110000; block += 256) {
    if (block >= 0xd800 && block < 0xe000) continue;
    if (!changes(codePointBlock(block))) continue;
    for (let cp = block; cp < block + 256; cp++) {
      const c = String.fromCodePoint(cp);
      if (changes(c)) out.push(c);
    }
  }
  return candidates = out;
}

/** `expr` with each of `fixes` (char → wanted text) applied. */
function withFixes(expr: string, fixes: Map<string, string>): string {
  let from = "", to = "";
  let out = expr;
  for (const [c, want] of fixes) {
    if ([...want].length === 1) {
      from += c;
      to += want;
    } else out = `replace(${out}, ${pgString(c)}, ${pgString(want)})`;
  }
  return from ? `translate(${out}, ${pgString(from)}, ${pgString(to)})` : out;
}

interface Fixes {
  lower: Map<string, string>;
  upper: Map<string, string>;
  fold: Map<string, string>;
}

/** This runtime's code point ranges the functions' regexes name. */
interface Ranges {
  marks: readonly [number, number][];
  words: readonly [number, number][];
}

/** This runtime's ranges (computed once per isolate, by scanning every code point). */
function runtimeRanges(): Ranges {
  return { marks: markRanges(), words: wordRanges() };
}

/**
 * The CREATE statements of the functions with these fixes. `schema` (the
 * quoted schema they are made in) names the functions they call: a
 * function an index uses runs under whatever `search_path` the session
 * has, and pg_restore and PostgreSQL 17's maintenance (ANALYZE, REINDEX,
 * autovacuum) run with only `pg_catalog`, where an unqualified `mb_upper`
 * is not found.
 */
function definitions(f: Fixes, r: Ranges, schema: string): string[] {
  const fn = (name: string, returns: string, body: string) =>
    `CREATE OR REPLACE FUNCTION ${name}(text) RETURNS ${returns} LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $mb$ SELECT ${body} $mb$`;
  const marks = pgString(`[${charClass(r.marks)}]+`);
  const nonWords = pgString(`[^${charClass(r.words)}]+`);
  const folded = withFixes(
    `normalize(regexp_replace(normalize(replace(${schema}.mb_lower(${schema}.mb_upper($1)), ${
      pgString("ς")
    }, ${pgString("σ")}), NFD), ${marks}, '', 'g'), NFC)`,
    f.fold,
  );
  return [
    fn(
      "mb_lower",
      "text",
      withFixes(`lower($1 COLLATE "und-x-icu")`, f.lower),
    ),
    fn(
      "mb_upper",
      "text",
      withFixes(`upper($1 COLLATE "und-x-icu")`, f.upper),
    ),
    // ASCII text (as many bytes as characters) folds to its ASCII lower case.
    fn(
      "mb_fold",
      "text",
      `CASE WHEN octet_length($1) = char_length($1) THEN lower($1 COLLATE "C") ELSE ${folded} END`,
    ),
    fn(
      "mb_search_vector",
      "tsvector",
      `COALESCE((SELECT string_agg('''' || w || ''':' || LEAST(n, 16383), ' ' ORDER BY n) FROM regexp_split_to_table(${schema}.mb_fold(left($1, ${SEARCH_TEXT_CHARS})), ${nonWords}) WITH ORDINALITY AS s(w, n) WHERE w <> '' AND char_length(w) <= ${MAX_WORD_CHARS}), '')::tsvector`,
    ),
  ];
}

/** Runs `sql` over each candidate char; rows in the candidates' order. */
async function perChar(
  tx: Queryable,
  select: string,
  chars: string[],
): Promise<string[][]> {
  const rows = await tx.query(
    `SELECT ${select} FROM unnest(?::text[]) WITH ORDINALITY AS x(c, i) ORDER BY i`,
    [`{${
      chars.map((c) => `"${c === '"' || c === "\\" ? "\\" + c : c}"`).join(",")
    }}`],
  );
  return rows.map((r) => Object.values(r).map(String));
}

/** The fixes that make the SQL functions give this runtime's results. */
async function measureFixes(tx: Queryable, schema: string): Promise<Fixes> {
  const chars = changingChars();
  const f: Fixes = { lower: new Map(), upper: new Map(), fold: new Map() };
  const cased = await perChar(
    tx,
    `lower(c COLLATE "und-x-icu") AS l, upper(c COLLATE "und-x-icu") AS u`,
    chars,
  );
  chars.forEach((c, i) => {
    if (cased[i][0] !== c.toLowerCase()) f.lower.set(c, c.toLowerCase());
    if (cased[i][1] !== c.toUpperCase()) f.upper.set(c, c.toUpperCase());
  });
  for (const s of definitions(f, runtimeRanges(), schema)) await tx.exec(s);
  const folded = await perChar(tx, `mb_fold(c) AS f`, chars);
  chars.forEach((c, i) => {
    if (folded[i][0] !== foldText(c)) f.fold.set(c, foldText(c));
  });
  return f;
}

/**
 * The SQL of the functions as this runtime wants them, per server ICU
 * (its version and PostgreSQL's: the fixes depend on nothing else) and
 * schema, cached per isolate.
 */
const wanted = new Map<string, string[]>();

/**
 * The `mb_meta` key of the last measurement (fixes and ranges, JSON), so
 * that a restart on the same runtime and server does not measure again:
 * measuring runs every changing code point through the server and scans
 * all 1.1 million code points, ~150 ms and ~100 MB of short-lived strings
 * that grew the young generation, and with it the idle server's memory by
 * ~15 MB, for good.
 */
const MEASURED_KEY = "text_functions";

interface Measured {
  /** What the measurement holds for: this runtime's Unicode, the server's ICU, the functions' shape. */
  key: string;
  lower: [string, string][];
  upper: [string, string][];
  fold: [string, string][];
  marks: [number, number][];
  words: [number, number][];
}

const NO_FIXES: Fixes = { lower: new Map(), upper: new Map(), fold: new Map() };

/**
 * What a measurement made with `r` is valid for: this runtime's Unicode
 * (`textVersion`), the server's ICU, and the functions as this code writes
 * them (their text without fixes: a change to them measures again).
 */
function measuredKey(icu: string, r: Ranges, schema: string): string {
  return `${textVersion()}|${icu}|${
    createHash("sha256").update(definitions(NO_FIXES, r, schema).join("\n"))
      .digest("hex").slice(0, 16)
  }`;
}

/** The stored measurement's definitions, when it holds for this runtime and server. */
async function storedDefinitions(
  tx: Queryable,
  icu: string,
  schema: string,
): Promise<string[] | undefined> {
  const [row] = await tx.query(
    `SELECT "value" FROM "mb_meta" WHERE "key" = '${MEASURED_KEY}'`,
  );
  if (!row) return undefined;
  let m: Measured;
  try {
    m = JSON.parse(String(row.value));
  } catch {
    return undefined; // not ours or damaged: measured again and replaced
  }
  const ranges = { marks: m.marks ?? [], words: m.words ?? [] };
  if (m.key !== measuredKey(icu, ranges, schema)) return undefined;
  const fixes = {
    lower: new Map(m.lower),
    upper: new Map(m.upper),
    fold: new Map(m.fold),
  };
  return definitions(fixes, ranges, schema);
}

/** Measures the fixes for this runtime and server, stores them, and returns the definitions. */
async function measuredDefinitions(
  tx: Queryable,
  icu: string,
  schema: string,
): Promise<string[]> {
  const fixes = await measureFixes(tx, schema);
  const ranges = runtimeRanges();
  const m: Measured = {
    key: measuredKey(icu, ranges, schema),
    lower: [...fixes.lower],
    upper: [...fixes.upper],
    fold: [...fixes.fold],
    marks: [...ranges.marks],
    words: [...ranges.words],
  };
  await tx.run(
    `INSERT INTO "mb_meta" ("key", "value") VALUES ('${MEASURED_KEY}', ?) ON CONFLICT ("key") DO UPDATE SET "value" = "excluded"."value"`,
    [JSON.stringify(m)],
  );
  return definitions(fixes, ranges, schema);
}

/** Forgets this isolate's cached definitions (tests: a start of another process). */
export function forgetTextFunctions(): void {
  wanted.clear();
}

/**
 * Creates (or, when this runtime's Unicode differs from what they were made
 * for, replaces) the text functions, and rebuilds the indexes that use them
 * after a replacement. Returns true when they were replaced (a search index
 * then needs rebuilding too).
 */
export async function ensureTextFunctions(store: Storage): Promise<boolean> {
  if (store.dialect.name !== "postgres") return false;
  return await store.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(${LOCK}) AS ok`);
    const [server] = await tx.query(
      `SELECT current_setting('server_version_num') || ' ' || COALESCE((SELECT collversion FROM pg_collation WHERE collname = 'und-x-icu'), '?') AS v, current_schema() AS s`,
    );
    const icu = String(server?.v);
    const schema = `"${String(server?.s).replaceAll('"', '""')}"`;
    const have = await tx.query(
      `SELECT p.proname AS name, p.prosrc AS src FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace AND p.proname IN ('mb_lower', 'mb_upper', 'mb_fold', 'mb_search_vector')`,
    );
    const body = (s: string) => s.slice(s.indexOf("$mb$") + 4, -4);
    const same = (defs: string[]) =>
      defs.every((d) => {
        const name = d.split(" ")[4].split("(")[0];
        return have.some((h) => h.name === name && h.src === body(d));
      });
    const key = `${icu} ${schema}`;
    const known = wanted.get(key);
    if (known && same(known)) return false;
    const existed = have.length > 0;
    const defs = known ??
      await storedDefinitions(tx, icu, schema) ??
      await measuredDefinitions(tx, icu, schema);
    wanted.set(key, defs);
    if (same(defs)) return false;
    for (const s of defs) await tx.exec(s);
    if (!existed) return false;
    // Indexes over the old definitions hold the old results.
    const users = await tx.query(
      `SELECT DISTINCT d.objid::regclass::text AS name FROM pg_depend d JOIN pg_proc p ON p.oid = d.refobjid WHERE d.classid = 'pg_class'::regclass AND p.proname IN ('mb_lower', 'mb_upper', 'mb_fold', 'mb_search_vector') AND p.pronamespace = current_schema()::regnamespace`,
    );
    for (const u of users) await tx.exec(`REINDEX INDEX ${String(u.name)}`);
    return true;
  });
}
