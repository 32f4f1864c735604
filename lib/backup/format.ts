/**
 * The backup archive's layout (a gzip-compressed tar), shared by the writer
 * (create.ts) and the reader (restore.ts):
 *
 * - `moonbase-backup.json` first: `{format, moonbase, database, created}`,
 *   so a reader refuses another format before reading further;
 * - `tables/<table>/<n>.jsonl`: the rows of `mb_tables` (the schemas), then
 *   of `mb_admins`, of the system tables (tables.ts) and of every entity,
 *   one JSON object per line, values in their portable form (booleans as
 *   booleans, JSON as JSON, integers as numbers), in chunks of about 1 MiB;
 * - `files/<entity id>/<stored name>`: every file the ledger records;
 * - `manifest.json` last: counts and the SHA-256 of every other entry.
 *
 * @module
 */

/** The format this version writes and reads. */
export const BACKUP_FORMAT = 1;

/**
 * The most bytes a reader takes into memory for one entry: the header, the
 * manifest (about 100 bytes per entry it lists), a chunk of rows (writers
 * cut chunks at 1 MiB, so a chunk is that plus one row).
 */
export const MAX_ENTRY_BYTES = {
  header: 64 * 1024,
  manifest: 128 * 1024 * 1024,
  rows: 64 * 1024 * 1024,
} as const;

/** The first entry. */
export const HEADER_ENTRY = "moonbase-backup.json";
/** The last entry. */
export const MANIFEST_ENTRY = "manifest.json";

/** What the first entry says. */
export interface BackupHeader {
  format: number;
  moonbase: string;
  database: "sqlite" | "postgres";
  /** ISO 8601 time the backup's snapshot was taken. */
  created: string;
}

/** What the last entry says. */
export interface BackupManifest extends BackupHeader {
  /** Rows per table (`mb_tables`, `mb_admins`, system tables, entities). */
  tables: Record<string, number>;
  /** Files archived, and their bytes. */
  files: number;
  file_bytes: number;
  /** Files the ledger recorded that were gone when read (removed meanwhile by another instance). */
  missing_files: number;
  /** Entry name → SHA-256 (hex) of its bytes. */
  checksums: Record<string, string>;
}

/** The entry holding chunk `n` (from 1) of a table's rows. */
export function tableEntry(table: string, n: number): string {
  return `tables/${table}/${String(n).padStart(6, "0")}.jsonl`;
}

/** The table of a `tables/…` entry, or undefined for another entry. */
export function tableOfEntry(name: string): string | undefined {
  return /^tables\/([A-Za-z0-9_]{1,64})\/\d{6}\.jsonl$/.exec(name)?.[1];
}

/** The entity id and stored name of a `files/…` entry, or undefined. */
export function fileOfEntry(
  name: string,
): { entityId: string; name: string } | undefined {
  const m = /^files\/([A-Za-z0-9_-]{1,64})\/([^/]+)$/.exec(name);
  return m ? { entityId: m[1], name: m[2] } : undefined;
}
