/**
 * The JWT signing secret: `MB_JWT_SECRET`, else a random 256-bit secret kept
 * in `<dataDir>/.jwt_secret` (mode 0600). There is no built-in default.
 *
 * Starts at once on one data directory all end up with one secret: a
 * missing file is created whole by a link that fails when another start
 * created it first (then its secret is used), and an empty one (a write cut
 * off) is filled only under an exclusive lock on it, by the first start
 * that finds it still empty.
 *
 * @module
 */

import { join } from "node:path";
import { randomToken } from "../ids.ts";

/** Where the secret came from. */
export interface Secret {
  value: string;
  source: "env" | "file" | "generated";
}

/** Shortest secret signed with. */
const MIN = 32;

const OR_ENV = "or set MB_JWT_SECRET";

function errorText(err: unknown): string {
  return err instanceof Error ? err.message.split("\n")[0] : String(err);
}

/** A one-line error for a file system failure on the secret's file. */
function fileError(action: string, path: string, err: unknown): Error {
  if (err instanceof Deno.errors.IsADirectory) {
    return new Error(
      `Cannot ${action} the JWT secret in ${path}: it is a directory, not a file; move it away (a secret is then generated there) ${OR_ENV}`,
    );
  }
  return new Error(
    `Cannot ${action} the JWT secret in ${path}: ${
      errorText(err)
    }; make the data dir and the file readable and writable by this user ${OR_ENV}`,
  );
}

function tooShort(path: string): Error {
  return new Error(
    `Cannot use the JWT secret in ${path}: it has fewer than ${MIN} characters; put a longer one there, remove the file to have one generated, ${OR_ENV}`,
  );
}

/** The file's text, or undefined when there is none. */
async function readSecretFile(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw fileError("read", path, err);
  }
}

/**
 * Creates the file holding `value` when there is none: written whole to a
 * file of our own, then linked into place (a start reading meanwhile never
 * sees half a secret). False when another start created it first.
 */
async function createSecretFile(
  dataDir: string,
  path: string,
  value: string,
): Promise<boolean> {
  const tmp = `${path}.${crypto.randomUUID()}.tmp`;
  try {
    await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
    await Deno.writeTextFile(tmp, value + "\n", {
      mode: 0o600,
      createNew: true,
    });
    await Deno.link(tmp, path);
  } catch (err) {
    if (err instanceof Deno.errors.AlreadyExists) return false;
    throw fileError("write", path, err);
  } finally {
    // Ours (createNew); none when writing it failed.
    await Deno.remove(tmp).catch(() => {});
  }
  await Deno.chmod(path, 0o600).catch(() => {}); // not on every platform
  return true;
}

/**
 * Under an exclusive lock on the file (`read`, its text read without one,
 * was empty or short): its secret when another start filled it meanwhile, else a new one
 * written into it. Undefined when the file is gone (removed meanwhile).
 */
async function fillEmptyFile(
  path: string,
  read: string,
): Promise<Secret | undefined> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true, write: true });
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    // A short secret in a file we may not write: it is the short secret.
    throw read === "" ? fileError("write", path, err) : tooShort(path);
  }
  try {
    await file.lock(true);
    const text = (await readAll(file, path)).trim();
    if (text.length >= MIN) return { value: text, source: "file" };
    // Someone's secret, too short to sign with: never overwritten.
    if (text !== "") throw tooShort(path);
    const value = randomToken(32);
    const bytes = new TextEncoder().encode(value + "\n");
    try {
      await file.seek(0, Deno.SeekMode.Start);
      await file.truncate(0);
      let n = 0;
      while (n < bytes.length) n += await file.write(bytes.subarray(n));
      await file.syncData();
    } catch (err) {
      throw fileError("write", path, err);
    }
    await Deno.chmod(path, 0o600).catch(() => {}); // not on every platform
    return { value, source: "generated" };
  } finally {
    file.close(); // releases the lock
  }
}

/** The text of an open file, from its start (a secret file is small). */
async function readAll(file: Deno.FsFile, path: string): Promise<string> {
  const chunks: Uint8Array[] = [];
  try {
    await file.seek(0, Deno.SeekMode.Start);
    for (let total = 0; total < 64 * 1024;) {
      const buf = new Uint8Array(4096);
      const n = await file.read(buf);
      if (n === null) break;
      chunks.push(buf.subarray(0, n));
      total += n;
    }
  } catch (err) {
    throw fileError("read", path, err);
  }
  const out = new Uint8Array(chunks.reduce((a, c) => a + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return new TextDecoder().decode(out);
}

/**
 * Resolves the signing secret.
 *
 * @example
 * ```ts ignore
 * import { resolveSecret } from "moonbase/lib/auth/secret.ts";
 * const s = await resolveSecret("./data", undefined);
 * ```
 */
export async function resolveSecret(
  dataDir: string,
  env: string | undefined,
): Promise<Secret> {
  if (env !== undefined && env !== "") {
    if (env.length < MIN) {
      throw new Error(
        `Cannot use MB_JWT_SECRET: it must have at least ${MIN} characters`,
      );
    }
    return { value: env, source: "env" };
  }
  const path = join(dataDir, ".jwt_secret");
  for (;;) {
    const text = (await readSecretFile(path))?.trim();
    if (text !== undefined && text.length >= MIN) {
      return { value: text, source: "file" };
    }
    if (text === undefined) {
      const value = randomToken(32);
      if (await createSecretFile(dataDir, path, value)) {
        return { value, source: "generated" };
      }
      continue; // another start created it first: use its secret
    }
    // Empty, or short (maybe read while another start was filling it).
    const secret = await fillEmptyFile(path, text);
    if (secret) return secret;
  }
}
