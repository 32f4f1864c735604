/**
 * A data directory belongs to one database: the first database a server or
 * a command uses it with is written into `<dataDir>/database.json` (its id
 * from `mb_meta`, its kind and where it is, never a password), once. A
 * server or command pointed at the directory with another database is
 * refused with one line naming both, unless told to take the directory
 * over (`rebindDataDir`): then the marker names the new database, and the
 * files of the old one stay on disk untouched (the new database's ledger
 * does not record them, so nothing ever removes them).
 *
 * @module
 */

import { join } from "node:path";

/** The file, in the data directory, naming the database it belongs to. */
export const MARKER = "database.json";

/** The SQLite database file in its data directory. */
export const SQLITE_FILE = "moonbase.db";

/** A database as the marker names it. */
export interface DatabaseRef {
  kind: "sqlite" | "postgres";
  /** SQLite: the file in the data directory; PostgreSQL: user@host:port/db. */
  location: string;
}

/** What `database.json` holds. */
interface Marker extends DatabaseRef {
  database_id: string;
  bound: string;
  /** Where the database lives (`databaseHome`), to tell it from a copy. */
  home?: string;
}

const ELSEWHERE = "pass --dataDir <another dir>";
const TAKE_OVER = `${ELSEWHERE}, or --rebindDataDir to take it over`;

/**
 * The database a config names, for the marker and for messages: the
 * PostgreSQL URL without its password or parameters.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { databaseRef } from "moonbase/lib/files/data_dir.ts";
 * assert.deepEqual(databaseRef("PSQL", "postgres://app:secret@db.local/shop?sslmode=require"), {
 *   kind: "postgres",
 *   location: "app@db.local:5432/shop",
 * });
 * assert.deepEqual(databaseRef("SQLITE"), { kind: "sqlite", location: "moonbase.db" });
 * ```
 */
export function databaseRef(
  database: string,
  connection?: string,
): DatabaseRef {
  if (database.toUpperCase() !== "PSQL") {
    return { kind: "sqlite", location: SQLITE_FILE };
  }
  let location = "(address not shown)";
  try {
    const u = new URL(connection ?? "");
    const user = decodeURIComponent(u.username);
    const host = u.hostname || u.searchParams.get("host") || "localhost";
    const db = decodeURIComponent(u.pathname.replace(/^\//, "")) || user;
    location = `${user ? `${user}@` : ""}${host}:${u.port || "5432"}/${db}`;
  } catch { /* not a URL: postgres.js refuses it when connecting */ }
  return { kind: "postgres", location };
}

/** "the SQLite database ./data/moonbase.db", "the PostgreSQL database u@h:5432/db". */
export function describeDatabase(dataDir: string, ref: DatabaseRef): string {
  return ref.kind === "sqlite"
    ? `the SQLite database ${inDir(dataDir, ref.location)}`
    : `the PostgreSQL database ${ref.location}`;
}

function inDir(dataDir: string, name: string): string {
  return `${dataDir.replace(/[\\/]+$/, "") || "/"}/${name}`;
}

function refused(dataDir: string, reason: string, advice = TAKE_OVER) {
  return new Error(`Cannot use data dir ${dataDir}: ${reason}; ${advice}`);
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

/**
 * Refuses a marker that is a directory (or anything but a file): even
 * `rebind` cannot write a marker there, and nothing removes what it did
 * not create.
 */
async function checkMarkerIsFile(dataDir: string): Promise<void> {
  const path = join(dataDir, MARKER);
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return;
    throw refused(
      dataDir,
      `cannot read ${path} (${errorText(err)})`,
      `make it readable by this user, or ${ELSEWHERE}`,
    );
  }
  if (!info.isFile) {
    throw refused(
      dataDir,
      `${path} is ${
        info.isDirectory ? "a directory" : "not a regular file"
      }, not the file naming its database`,
      `move it away, or ${ELSEWHERE}`,
    );
  }
}

/** The marker, or undefined when the directory has none. */
async function readMarker(dataDir: string): Promise<Marker | undefined> {
  await checkMarkerIsFile(dataDir);
  const path = join(dataDir, MARKER);
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw refused(dataDir, `cannot read ${path} (${errorText(err)})`);
  }
  try {
    const m = JSON.parse(text) as Partial<Marker>;
    if (
      typeof m.database_id === "string" && m.database_id !== "" &&
      (m.kind === "sqlite" || m.kind === "postgres") &&
      typeof m.location === "string"
    ) {
      return {
        database_id: m.database_id,
        kind: m.kind,
        location: m.location,
        bound: String(m.bound ?? ""),
        ...(typeof m.home === "string" && m.home !== ""
          ? { home: m.home }
          : {}),
      };
    }
  } catch { /* reported below */ }
  throw refused(
    dataDir,
    `${path} does not name a database`,
    `restore it, ${TAKE_OVER}`,
  );
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message.split("\n")[0] : String(err);
}

/**
 * The checks that need no database, made before it opens (SQLite would
 * create its file in the directory): a marker of another kind of database,
 * a SQLite marker whose database file is gone, or (no marker yet: a data
 * directory from before markers) a PostgreSQL server on a directory that
 * holds a SQLite database. Nothing is checked with `rebind`.
 */
export async function checkBeforeOpen(
  dataDir: string,
  ref: DatabaseRef,
  rebind: boolean,
): Promise<void> {
  if (rebind) return await checkMarkerIsFile(dataDir);
  const marker = await readMarker(dataDir);
  const current = describeDatabase(dataDir, ref);
  if (marker) {
    if (marker.kind !== ref.kind) {
      throw refused(
        dataDir,
        `it belongs to ${describeDatabase(dataDir, marker)}, not ${current}`,
      );
    }
    if (
      marker.kind === "sqlite" && !await exists(join(dataDir, marker.location))
    ) {
      throw refused(
        dataDir,
        `it belongs to ${
          describeDatabase(dataDir, marker)
        }, which is missing (its files are still there)`,
        `restore it, ${ELSEWHERE}, or --rebindDataDir to start a new database there`,
      );
    }
    return;
  }
  if (ref.kind === "postgres" && await exists(join(dataDir, SQLITE_FILE))) {
    throw refused(
      dataDir,
      `it holds the SQLite database ${
        inDir(dataDir, SQLITE_FILE)
      }, not ${current}`,
    );
  }
}

/**
 * True when two homes (`databaseHome`) name different databases: another
 * database oid, or (both known) another cluster.
 */
function otherHome(a: string, b: string): boolean {
  const [sa, oa] = a.split("/");
  const [sb, ob] = b.split("/");
  return oa !== ob || (sa !== "pg:?" && sb !== "pg:?" && sa !== sb);
}

/**
 * Binds the directory to the database `id` living at `home` (writes the
 * marker when there is none), or checks it is bound to it. A directory
 * bound to another database is refused, or with `rebind` bound to this
 * one; returns then what it belonged to before (for a notice). A copy of
 * the database (the same id at another home: restored from a dump, made
 * from a template) is another database.
 */
export async function bindDataDir(
  dataDir: string,
  ref: DatabaseRef,
  id: string,
  rebind: boolean,
  home?: string,
): Promise<string | undefined> {
  let marker: Marker | undefined;
  await checkMarkerIsFile(dataDir); // not even rebind writes over that
  try {
    marker = await readMarker(dataDir);
  } catch (err) {
    if (!rebind) throw err;
  }
  const mine: Marker = {
    database_id: id,
    ...ref,
    bound: new Date().toISOString(),
    ...(home ? { home } : {}),
  };
  if (marker?.database_id === id) {
    if (!home || marker.home === home) return undefined;
    if (!marker.home) {
      // Bound before markers named homes: name this one, once.
      await writeMarker(dataDir, { ...marker, home }, true);
      return undefined;
    }
    if (!otherHome(marker.home, home)) return undefined;
    if (!rebind) {
      const theirs = describeDatabase(dataDir, marker);
      const current = describeDatabase(dataDir, ref);
      throw refused(
        dataDir,
        `it belongs to ${theirs} (database id ${id.slice(0, 8)}); ${
          current === theirs ? "this one" : current
        } has that id but is a copy of it (restored from a dump or made from it as a template), whose deletions would remove the original's files`,
        `${ELSEWHERE}, or --rebindDataDir if the original is gone and this copy takes its place (e.g. after moving the database to another server)`,
      );
    }
  }
  if (rebind) {
    await writeMarker(dataDir, mine, true);
    return marker
      ? `${describeDatabase(dataDir, marker)} (database id ${
        marker.database_id.slice(0, 8)
      })`
      : "no readable database";
  }
  if (!marker) {
    if (await writeMarker(dataDir, mine, false)) return undefined;
    // Another start bound it first: check against what it wrote.
    return await bindDataDir(dataDir, ref, id, false, home);
  }
  let theirs = describeDatabase(dataDir, marker);
  let current = describeDatabase(dataDir, ref);
  if (theirs === current) {
    theirs += ` (database id ${marker.database_id.slice(0, 8)})`;
    current = `this one (database id ${id.slice(0, 8)})`;
  }
  throw refused(dataDir, `it belongs to ${theirs}, not ${current}`);
}

/**
 * Writes the marker through a temporary file of our own: linked into place
 * when there is none (false when another start got there first), or renamed
 * over the old one (`replace`).
 */
async function writeMarker(
  dataDir: string,
  marker: Marker,
  replace: boolean,
): Promise<boolean> {
  const path = join(dataDir, MARKER);
  const tmp = `${path}.${crypto.randomUUID()}.tmp`;
  const text = JSON.stringify(
    {
      note:
        "Moonbase: this data directory belongs to the database below; another database is refused here unless started with --rebindDataDir",
      ...marker,
    },
    null,
    2,
  );
  try {
    await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
    await Deno.writeTextFile(tmp, text + "\n", {
      createNew: true,
      mode: 0o600,
    });
    if (replace) await Deno.rename(tmp, path);
    else await Deno.link(tmp, path);
    return true;
  } catch (err) {
    if (!replace && err instanceof Deno.errors.AlreadyExists) return false;
    throw refused(
      dataDir,
      `cannot write ${path} (${errorText(err)})`,
      `make the directory writable by this user, or ${ELSEWHERE}`,
    );
  } finally {
    // The temporary file is ours (createNew); after a rename it is gone.
    await Deno.remove(tmp).catch(() => {});
  }
}
