/**
 * Restores a backup (format.ts) into the connected database, SQLite or
 * PostgreSQL whichever wrote it, all or nothing:
 *
 * 1. `verifyBackup` reads the whole archive once: the format, every entry's
 *    SHA-256 against the manifest, nothing missing or extra. A corrupt,
 *    truncated or foreign archive stops here, with nothing touched.
 * 2. The files are written back under their stored names, each recorded in
 *    the ledger first (as uploads are): if a later step fails they are
 *    recorded files no record references, which the sweep removes.
 * 3. One transaction drops the entities' tables, replaces the schemas,
 *    admins and system tables (tables.ts) with the archive's, creates the
 *    tables (each schema held to the schema API's checks, each view to the
 *    view rule: restored_schema.ts) and inserts every row, checks the counts, and bumps the schema
 *    version so every instance reloads. A failure rolls it all back: the
 *    data is as it was.
 *
 * Over 350 lines, one idea: a restore, its three steps in order; kept whole so
 * the all-or-nothing sequence reads top to bottom.
 *
 * @module
 */

import type {
  ColumnKind,
  Queryable,
  SqlValue,
  Storage,
} from "../db/storage.ts";
import { MoonbaseError } from "../errors.ts";
import { columnOf, createSql, tableOf } from "../schema/ddl.ts";
import { ADMIN_SCHEMA } from "../schema/system.ts";
import {
  createSearchSql,
  dropSearchTablesSql,
  dropSearchTriggersSql,
  searchableFields,
} from "../schema/search_ddl.ts";
import type { EntitySchema, EntityType } from "../schema/types.ts";
import { allFields } from "../schema/builtin.ts";
import { restoredSchema } from "../schema/restored_schema.ts";
import type { SchemaContext } from "../schema/validate.ts";
import { guardView, type ViewWorldEntity } from "../schema/views.ts";
import { ruleProblem } from "../rules/check.ts";
import { createHash } from "node:crypto";
import { readTar, type TarEntry } from "./tar.ts";
import {
  BACKUP_FORMAT,
  type BackupHeader,
  type BackupManifest,
  fileOfEntry,
  HEADER_ENTRY,
  MANIFEST_ENTRY,
  MAX_ENTRY_BYTES,
  tableOfEntry,
} from "./format.ts";
import { type Progress, tableColumns } from "./create.ts";
import { SYSTEM_TABLES } from "./tables.ts";
import type { BackupFiles, BackupSecrets } from "./sources.ts";

/** Opens the archive's bytes anew (each pass reads it from the start). */
export type OpenArchive = () => Promise<ReadableStream<Uint8Array>>;

function corrupt(why: string): MoonbaseError {
  return new MoonbaseError("invalid", `Cannot restore backup: ${why}`);
}

async function* entriesOf(open: OpenArchive): AsyncGenerator<TarEntry> {
  const raw = await open();
  let stream: ReadableStream<Uint8Array>;
  try {
    stream = raw.pipeThrough(
      new DecompressionStream("gzip") as unknown as TransformStream<
        Uint8Array,
        Uint8Array
      >,
    );
  } catch {
    throw corrupt("not a gzip archive");
  }
  try {
    yield* readTar(stream);
  } catch (err) {
    if (err instanceof MoonbaseError) throw err;
    // The decompressor's own failure: damaged bytes.
    throw corrupt("the archive is damaged (not a whole gzip stream)");
  }
}

const decoder = new TextDecoder();

function parseJson<T>(bytes: Uint8Array, what: string): T {
  try {
    return JSON.parse(decoder.decode(bytes)) as T;
  } catch {
    throw corrupt(`${what} is not JSON`);
  }
}

/**
 * Reads the whole archive and checks it: its format, and every entry
 * against the manifest's checksums. Returns the manifest.
 */
export async function verifyBackup(open: OpenArchive): Promise<BackupManifest> {
  const sums: Record<string, string> = {};
  let header: BackupHeader | undefined;
  let manifest: BackupManifest | undefined;
  for await (const entry of entriesOf(open)) {
    if (!header) {
      if (entry.name !== HEADER_ENTRY) {
        throw corrupt("it is not a Moonbase backup (no moonbase-backup.json)");
      }
      const bytes = await entry.bytes(MAX_ENTRY_BYTES.header);
      header = parseJson<BackupHeader>(bytes, HEADER_ENTRY);
      if (header.format !== BACKUP_FORMAT) {
        throw corrupt(
          `it is in format ${header.format} (Moonbase ${header.moonbase}); this version reads format ${BACKUP_FORMAT}`,
        );
      }
      sums[entry.name] = createHash("sha256").update(bytes).digest("hex");
      continue;
    }
    if (manifest) throw corrupt("an entry follows the manifest");
    if (entry.name === MANIFEST_ENTRY) {
      manifest = parseJson<BackupManifest>(
        await entry.bytes(MAX_ENTRY_BYTES.manifest),
        MANIFEST_ENTRY,
      );
      continue;
    }
    if (!tableOfEntry(entry.name) && !fileOfEntry(entry.name)) {
      throw corrupt(`unexpected entry ${entry.name.slice(0, 200)}`);
    }
    const hash = createHash("sha256");
    for await (const part of entry.body()) hash.update(part);
    sums[entry.name] = hash.digest("hex");
  }
  if (!header) throw corrupt("the archive is empty");
  if (!manifest) throw corrupt("the archive is truncated (no manifest)");
  const want = manifest.checksums ?? {};
  for (const [name, sum] of Object.entries(sums)) {
    if (want[name] !== sum) {
      throw corrupt(`the checksum of ${name.slice(0, 200)} does not match`);
    }
  }
  for (const name of Object.keys(want)) {
    if (!(name in sums)) throw corrupt(`${name.slice(0, 200)} is missing`);
  }
  return manifest;
}

/** Writes the archive's files back (step 2); returns how many were new. */
export async function restoreFiles(
  open: OpenArchive,
  files: BackupFiles,
  onProgress?: (p: Progress) => void,
): Promise<number> {
  let written = 0, bytes = 0;
  for await (const entry of entriesOf(open)) {
    const file = fileOfEntry(entry.name);
    if (!file) continue;
    if (
      await files.writeNamed(file.entityId, file.name, entry.size, entry.body())
    ) written++;
    bytes += entry.size;
    onProgress?.({ stage: "files", rows: 0, bytes });
  }
  return written;
}

/** Rows per INSERT statement (bounded by the parameter limit). */
function rowsPerInsert(columns: number): number {
  return Math.max(1, Math.min(200, Math.floor(900 / columns)));
}

interface TableTarget {
  name: string;
  columns: [string, ColumnKind][];
  conflict?: readonly string[];
  convert?: (row: Record<string, unknown>) => Record<string, unknown>;
}

async function insertRows(
  tx: Queryable,
  storage: Storage,
  target: TableTarget,
  rows: Record<string, unknown>[],
): Promise<void> {
  const d = storage.dialect;
  const cols = target.columns.map(([c]) => columnOf(c)).join(", ");
  const one = `(${target.columns.map(() => "?").join(", ")})`;
  const per = rowsPerInsert(target.columns.length);
  for (let i = 0; i < rows.length; i += per) {
    const part = rows.slice(i, i + per);
    const params: SqlValue[] = [];
    for (const raw of part) {
      const row = target.convert ? target.convert(raw) : raw;
      for (const [c, kind] of target.columns) {
        params.push(d.encode(kind, row[c] ?? null));
      }
    }
    const conflict = target.conflict
      ? ` ON CONFLICT (${target.conflict.map(columnOf).join(", ")}) DO NOTHING`
      : "";
    await tx.run(
      `INSERT INTO ${tableOf(target.name)} (${cols}) VALUES ${
        part.map(() => one).join(", ")
      }${conflict}`,
      params,
    );
  }
}

function linesOf(bytes: Uint8Array, table: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of decoder.decode(bytes).split("\n")) {
    if (line === "") continue;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch {
      throw corrupt(`a row of ${table} is not JSON`);
    }
    if (typeof row !== "object" || row === null || Array.isArray(row)) {
      throw corrupt(`a row of ${table} is not an object`);
    }
    out.push(row as Record<string, unknown>);
  }
  return out;
}

/** What restoring the database needs. */
export interface RestoreTarget {
  storage: Storage;
  secrets: BackupSecrets;
}

/**
 * Every helper name: a backup's rules may call helpers of scripts the
 * restoring process has not loaded (the CLI loads none). A rule calling a
 * helper that is missing when it runs refuses every request.
 */
class AnyHelper extends Set<string> {
  override has(_name: string): boolean {
    return true;
  }
}

/** Checks a custom rule as the schema API does (any helper name allowed). */
function checkExpr(expr: string): string | undefined {
  return ruleProblem(expr, new AnyHelper())?.message;
}

/**
 * The archive's schemas as the schema API would have made them (names,
 * fields, rules, indexes and auth options checked; ids and times kept);
 * 400 for the first one it would refuse.
 */
function checkedSchemas(stored: readonly unknown[]): EntitySchema[] {
  const types = new Map<string, EntityType>();
  for (const s of stored) {
    const { name, type } = (s ?? {}) as { name?: unknown; type?: unknown };
    if (
      typeof name === "string" &&
      (type === "base" || type === "auth" || type === "view")
    ) types.set(name.toLowerCase(), type);
  }
  const ctx: SchemaContext = {
    entityType: (name) => types.get(name.toLowerCase()),
    checkExpr,
  };
  const names = new Set<string>(), ids = new Set<string>();
  const claim = (name: string) => {
    if (names.has(name.toLowerCase())) {
      throw corrupt(`two entities are named ${name}`);
    }
    names.add(name.toLowerCase());
  };
  return stored.map((s) => restoredSchema(s, ctx, claim, ids));
}

/**
 * Replaces the database's data with the archive's in one transaction
 * (step 3). The archive must have passed `verifyBackup`.
 */
export async function restoreDatabase(
  open: OpenArchive,
  target: RestoreTarget,
  manifest: BackupManifest,
  onProgress?: (p: Progress) => void,
): Promise<void> {
  const { storage, secrets } = target;
  const d = storage.dialect;
  const system = new Map(SYSTEM_TABLES.map((t) => [t.name, t]));
  await storage.transaction(async (tx) => {
    // Out with the old entities (views first: they may read tables).
    const old = (await tx.query(`SELECT "schema" FROM "mb_tables"`)).map((r) =>
      JSON.parse(String(r.schema)) as EntitySchema
    );
    // Their search indexes first (PostgreSQL drops a trigger by its table).
    for (const s of old) {
      if (searchableFields(s).length === 0) continue;
      for (
        const stmt of [
          ...dropSearchTriggersSql(s, d),
          ...dropSearchTablesSql(s, d),
        ]
      ) await tx.run(stmt);
    }
    for (const kind of ["view", "table"] as const) {
      for (const s of old) {
        if ((s.type === "view") !== (kind === "view")) continue;
        await tx.run(
          `DROP ${kind === "view" ? "VIEW" : "TABLE"} IF EXISTS ${
            tableOf(s.name)
          }`,
        );
      }
    }
    await tx.run(`DELETE FROM "mb_tables"`);
    await tx.run(`DELETE FROM "mb_admins"`);
    for (const t of SYSTEM_TABLES) {
      if (t.restore === "replace") {
        await tx.run(`DELETE FROM ${tableOf(t.name)}`);
      }
    }
    const schemas = new Map<string, EntitySchema>();
    const stored: Record<string, unknown>[] = [];
    let created = false;
    const counts: Record<string, number> = {};
    let rows = 0;
    const createEntities = async () => {
      if (created) return;
      created = true;
      const all = checkedSchemas(stored);
      for (const s of all) schemas.set(s.name, s);
      const world: ViewWorldEntity[] = [ADMIN_SCHEMA, ...all].map((s) => ({
        schema: s,
        fields: allFields(s),
      }));
      // Tables first, then views (which read them), in the archive's order;
      // each view held to the view rule, as the schema API holds it.
      for (const s of all.filter((s) => s.type !== "view")) {
        for (const stmt of createSql(s, d)) await tx.run(stmt);
        // Search indexes are not in archives: their triggers fill them
        // from the rows restored below.
        for (const stmt of createSearchSql(s, d)) await tx.run(stmt);
      }
      for (const s of all.filter((s) => s.type === "view")) {
        for (const stmt of createSql(s, d)) await tx.run(stmt);
        try {
          s.fields = await guardView(tx, d, world, s);
        } catch (err) {
          if (!(err instanceof MoonbaseError)) throw err;
          throw corrupt(`view ${s.name}: ${err.message}`);
        }
        world.find((w) => w.schema === s)!.fields = allFields(s);
      }
      await insertRows(
        tx,
        storage,
        {
          name: "mb_tables",
          columns: [
            ["id", "text"],
            ["name", "text"],
            ["lname", "text"],
            ["type", "text"],
            ["schema", "text"],
            ["created", "text"],
            ["updated", "text"],
          ],
        },
        all.map((s) => ({
          id: s.id,
          name: s.name,
          lname: s.name.toLowerCase(),
          type: s.type,
          schema: JSON.stringify(s),
          created: s.created,
          updated: s.updated,
        })),
      );
    };
    for await (const entry of entriesOf(open)) {
      const table = tableOfEntry(entry.name);
      if (!table) continue;
      const batch = linesOf(await entry.bytes(MAX_ENTRY_BYTES.rows), table);
      counts[table] = (counts[table] ?? 0) + batch.length;
      rows += batch.length;
      if (table === "mb_tables") {
        if (created) throw corrupt("schemas follow the rows of entities");
        for (const row of batch) {
          try {
            stored.push(JSON.parse(String(row.schema)));
          } catch {
            throw corrupt("a schema of mb_tables is not JSON");
          }
        }
        continue;
      }
      await createEntities();
      const sys = system.get(table);
      let into: TableTarget;
      if (table === "mb_admins") {
        into = { name: table, columns: tableColumns(ADMIN_SCHEMA) };
      } else if (sys) {
        into = {
          name: table,
          columns: Object.entries(sys.columns),
          conflict: sys.restore === "merge" ? sys.key : undefined,
          convert: table === "mb_totp"
            ? (r) => ({
              ...r,
              secret: secrets.sealTotp(
                String(r.entity_id),
                String(r.user_id),
                String(r.secret),
              ),
            })
            : undefined,
        };
      } else {
        const schema = schemas.get(table);
        if (!schema || schema.type === "view") {
          throw corrupt(`rows of ${table}, which is no entity of the backup`);
        }
        into = { name: table, columns: tableColumns(schema) };
      }
      await insertRows(tx, storage, into, batch);
      onProgress?.({ stage: "records", rows, bytes: 0 });
    }
    await createEntities();
    for (const [table, n] of Object.entries(manifest.tables ?? {})) {
      if ((counts[table] ?? 0) !== n) {
        throw corrupt(
          `${table} has ${
            counts[table] ?? 0
          } rows where the manifest says ${n}`,
        );
      }
    }
    // Every instance reloads its schemas (lib/records/registry.ts).
    const version = await tx.query(
      `SELECT "value" FROM "mb_meta" WHERE "key" = 'schema_version'`,
    );
    await tx.run(
      `UPDATE "mb_meta" SET "value" = ? WHERE "key" = 'schema_version'`,
      [String(Number(version[0]?.value ?? 0) + 1)],
    );
  });
}
