/**
 * Writes a backup: one consistent snapshot of the database (every write
 * committed before it began, none after, none half) read on a connection
 * of its own while the server keeps serving, plus every recorded file, as
 * the archive format.ts describes, streamed (memory stays bounded by a
 * chunk of rows and a file's read buffer).
 *
 * Over 350 lines, one idea: writing one backup; kept whole because the
 * snapshot, the rows, the files and the manifest share its checksums and
 * progress.
 *
 * @module
 */

import { createHash, type Hash } from "node:crypto";
import type { ColumnKind, Queryable, Storage } from "../db/storage.ts";
import type { EntitySchema, FieldDef } from "../schema/types.ts";
import { builtinFields } from "../schema/builtin.ts";
import { kindOf } from "../schema/field_types.ts";
import { columnOf, tableOf } from "../schema/ddl.ts";
import { ADMIN_SCHEMA } from "../schema/system.ts";
import { TarWriter } from "./tar.ts";
import { MoonbaseError } from "../errors.ts";
import {
  BACKUP_FORMAT,
  type BackupHeader,
  type BackupManifest,
  HEADER_ENTRY,
  MANIFEST_ENTRY,
  MAX_ENTRY_BYTES,
  tableEntry,
} from "./format.ts";
import { portable, SYSTEM_TABLES } from "./tables.ts";
import type { BackupFiles, BackupSecrets } from "./sources.ts";

/** Bytes of rows per `tables/…` entry. */
const CHUNK_BYTES = 1 << 20;
/** Rows read per statement. */
const PAGE = 500;

/** What a backup reads. */
export interface BackupSource {
  storage: Storage;
  files: BackupFiles;
  secrets: BackupSecrets;
  /** The running Moonbase's version. */
  version: string;
  /** The database clock (ms). */
  now: () => number;
}

/** Progress of a backup or restore, for a progress bar or log lines. */
export interface Progress {
  stage: "records" | "files";
  /** Rows so far. */
  rows: number;
  /** File bytes so far. */
  bytes: number;
}

/** The columns of an entity's table with their kinds. */
export function tableColumns(schema: EntitySchema): [string, ColumnKind][] {
  const fields: readonly FieldDef[] = [
    ...builtinFields(schema.type),
    ...schema.fields.filter((f) => !f.system),
  ];
  return fields.map((f) => [f.name, kindOf(f)]);
}

class Checksums {
  readonly sums: Record<string, string> = {};
  of(name: string, bytes: Uint8Array): void {
    this.sums[name] = createHash("sha256").update(bytes).digest("hex");
  }
  async *through(
    name: string,
    body: AsyncIterable<Uint8Array>,
  ): AsyncGenerator<Uint8Array> {
    const hash: Hash = createHash("sha256");
    for await (const chunk of body) {
      hash.update(chunk);
      yield chunk;
    }
    this.sums[name] = hash.digest("hex");
  }
}

/** Writes one table's rows as chunk entries; returns the row count. */
async function writeRows(
  tar: TarWriter,
  sums: Checksums,
  table: string,
  pages: AsyncIterable<Record<string, unknown>[]>,
  progress: () => void,
  counted: { rows: number },
): Promise<number> {
  const encoder = new TextEncoder();
  let lines: string[] = [], size = 0, chunk = 0, rows = 0;
  const flush = async () => {
    if (lines.length === 0) return;
    const bytes = encoder.encode(lines.join(""));
    const name = tableEntry(table, ++chunk);
    sums.of(name, bytes);
    await tar.add(name, bytes);
    lines = [];
    size = 0;
  };
  for await (const page of pages) {
    for (const row of page) {
      const line = JSON.stringify(row) + "\n";
      if (line.length > MAX_ENTRY_BYTES.rows / 4) {
        throw new MoonbaseError(
          "too_large",
          `Cannot back up ${table}: record ${
            String(row.id ?? "").slice(0, 64)
          } is larger than a backup's rows may be (16 MiB)`,
        );
      }
      lines.push(line);
      size += line.length;
      rows++;
      if (size >= CHUNK_BYTES) await flush();
    }
    counted.rows += page.length;
    progress();
  }
  await flush();
  return rows;
}

/** Pages of a table's rows in key order, each value made portable by `conv`. */
export async function* pagesOf(
  q: Queryable,
  table: string,
  columns: [string, ColumnKind][],
  key: readonly string[],
  conv: (kind: ColumnKind, value: unknown) => unknown,
): AsyncGenerator<Record<string, unknown>[]> {
  // Read as c0, c1, …: physical column names may differ from field names.
  const cols = columns.map(([c], i) => `${columnOf(c)} AS "c${i}"`).join(", ");
  const keyCols = key.map(columnOf).join(", ");
  let after: unknown[] | undefined;
  while (true) {
    const where = after
      ? ` WHERE (${keyCols}) > (${key.map(() => "?").join(", ")})`
      : "";
    const rows = await q.query(
      `SELECT ${cols} FROM ${
        tableOf(table)
      }${where} ORDER BY ${keyCols} LIMIT ${PAGE}`,
      (after ?? []) as never[],
    );
    if (rows.length === 0) return;
    const page = rows.map((r) => {
      const out: Record<string, unknown> = {};
      columns.forEach(([c, kind], i) => out[c] = conv(kind, r[`c${i}`]));
      return out;
    });
    yield page;
    const last = rows[rows.length - 1];
    after = key.map((k) => last[`c${columns.findIndex(([c]) => c === k)}`]);
    if (rows.length < PAGE) return;
  }
}

/**
 * Writes a backup of `src` to `out` (a file being written, a download).
 * Resolves with the manifest once the archive is complete; on failure the
 * stream is aborted (the caller removes what it wrote).
 */
export async function writeBackup(
  src: BackupSource,
  out: WritableStream<Uint8Array>,
  onProgress?: (p: Progress) => void,
): Promise<BackupManifest> {
  const created = new Date(src.now()).toISOString();
  const tar = new TarWriter(src.now());
  const piping = tar.stream.pipeThrough(
    new CompressionStream("gzip") as unknown as TransformStream<
      Uint8Array,
      Uint8Array
    >,
  ).pipeTo(out);
  // Surfaces through `await piping` below (or the write that waits on it).
  piping.catch(() => {});
  const sums = new Checksums();
  const header: BackupHeader = {
    format: BACKUP_FORMAT,
    moonbase: src.version,
    database: src.storage.dialect.name === "postgres" ? "postgres" : "sqlite",
    created,
  };
  const counted = { rows: 0, bytes: 0 };
  const report = (stage: Progress["stage"]) => () =>
    onProgress?.({ stage, rows: counted.rows, bytes: counted.bytes });
  const tables: Record<string, number> = {};
  let files = 0, fileBytes = 0, missing = 0;
  const release = src.files.hold();
  const skipFile = SYSTEM_TABLES.find((t) => t.name === "mb_files")?.skip ??
    (() => false);
  try {
    const headerBytes = new TextEncoder().encode(JSON.stringify(header));
    sums.of(HEADER_ENTRY, headerBytes);
    await tar.add(HEADER_ENTRY, headerBytes);
    const d = src.storage.dialect;
    await src.storage.snapshot(async (q) => {
      const rowsOf = (
        table: string,
        columns: [string, ColumnKind][],
        key: readonly string[],
        conv: (kind: ColumnKind, v: unknown) => unknown,
      ) =>
        writeRows(
          tar,
          sums,
          table,
          pagesOf(q, table, columns, key, conv),
          report("records"),
          counted,
        );
      const asIs = (_k: ColumnKind, v: unknown) => v;
      const decoded = (k: ColumnKind, v: unknown) => d.decode(k, v);
      tables.mb_tables = await rowsOf(
        "mb_tables",
        [
          ["id", "text"],
          ["name", "text"],
          ["lname", "text"],
          ["type", "text"],
          ["schema", "text"],
          ["created", "text"],
          ["updated", "text"],
        ],
        ["id"],
        asIs,
      );
      tables.mb_admins = await rowsOf(
        "mb_admins",
        tableColumns(ADMIN_SCHEMA),
        ["id"],
        decoded,
      );
      for (const t of SYSTEM_TABLES) {
        const columns = Object.entries(t.columns);
        const secretOf = t.name === "mb_totp"
          ? (row: Record<string, unknown>) =>
            src.secrets.unsealTotp(
              String(row.entity_id),
              String(row.user_id),
              String(row.secret),
            )
          : undefined;
        tables[t.name] = await writeRows(
          tar,
          sums,
          t.name,
          mapPages(
            pagesOf(q, t.name, columns, t.key, portable),
            secretOf,
            t.skip,
          ),
          report("records"),
          counted,
        );
      }
      const schemas = (await q.query(
        `SELECT "schema" FROM "mb_tables" ORDER BY "created", "id"`,
      )).map((r) => JSON.parse(String(r.schema)) as EntitySchema);
      for (const schema of schemas) {
        if (schema.type === "view") continue;
        tables[schema.name] = await rowsOf(
          schema.name,
          tableColumns(schema),
          ["id"],
          decoded,
        );
      }
      const ledger = pagesOf(
        q,
        "mb_files",
        [["entity_id", "text"], [
          "name",
          "text",
        ]],
        ["entity_id", "name"],
        portable,
      );
      for await (const page of ledger) {
        for (const row of page) {
          if (skipFile(row)) continue;
          const entityId = String(row.entity_id), name = String(row.name);
          const file = await src.files.stream(entityId, name);
          if (!file) {
            missing++;
            continue;
          }
          const entry = `files/${entityId}/${name}`;
          await tar.addStream(
            entry,
            file.size,
            sums.through(
              entry,
              counting(file.body, (n) => {
                counted.bytes += n;
              }),
            ),
          );
          files++;
          fileBytes += file.size;
          report("files")();
        }
      }
    });
    const manifest: BackupManifest = {
      ...header,
      tables,
      files,
      file_bytes: fileBytes,
      missing_files: missing,
      checksums: sums.sums,
    };
    await tar.add(
      MANIFEST_ENTRY,
      new TextEncoder().encode(JSON.stringify(manifest, null, 1)),
    );
    await tar.close();
    await piping;
    return manifest;
  } catch (err) {
    await tar.abort(err);
    await piping.catch(() => {
      // Ignored: the archive failed; `err` says why.
    });
    throw err;
  } finally {
    release();
  }
}

async function* mapPages(
  pages: AsyncIterable<Record<string, unknown>[]>,
  secretOf: ((row: Record<string, unknown>) => string | undefined) | undefined,
  skip?: (row: Record<string, unknown>) => boolean,
): AsyncGenerator<Record<string, unknown>[]> {
  for await (const whole of pages) {
    const page = skip ? whole.filter((row) => !skip(row)) : whole;
    if (!secretOf) {
      yield page;
      continue;
    }
    // A secret this server cannot open (its key changed) cannot be carried.
    yield page.flatMap((row) => {
      const plain = secretOf(row);
      return plain === undefined ? [] : [{ ...row, secret: plain }];
    });
  }
}

async function* counting(
  body: AsyncIterable<Uint8Array>,
  add: (n: number) => void,
): AsyncGenerator<Uint8Array> {
  for await (const chunk of body) {
    add(chunk.length);
    yield chunk;
  }
}
