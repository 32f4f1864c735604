/**
 * The JWT signing secret: `MB_JWT_SECRET`, else a random 256-bit secret kept
 * in `<dataDir>/.jwt_secret` (mode 0600). There is no built-in default.
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
    if (env.length < 32) {
      throw new Error(
        "Cannot use MB_JWT_SECRET: it must have at least 32 characters",
      );
    }
    return { value: env, source: "env" };
  }
  const path = join(dataDir, ".jwt_secret");
  for (;;) {
    let text: string | undefined;
    try {
      text = (await Deno.readTextFile(path)).trim();
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    if (text !== undefined && text.length >= 32) {
      return { value: text, source: "file" };
    }
    if (text) {
      // Someone's secret, too short to sign with: never overwritten.
      throw new Error(
        `Cannot use the JWT secret in ${path}: it has fewer than 32 characters; put a longer one there, remove the file to have one generated, or set MB_JWT_SECRET`,
      );
    }
    const value = randomToken(32);
    await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
    // Written whole to a file of our own, then put in place at once: a
    // start reading meanwhile never sees half a secret.
    const tmp = `${path}.${crypto.randomUUID()}.tmp`;
    await Deno.writeTextFile(tmp, value + "\n", {
      mode: 0o600,
      createNew: true,
    });
    try {
      // An empty file (a write cut off) holds nothing: it is replaced.
      if (text === "") await Deno.rename(tmp, path);
      else await Deno.link(tmp, path);
    } catch (err) {
      // Another start wrote one first: use it.
      if (err instanceof Deno.errors.AlreadyExists) continue;
      throw err;
    } finally {
      await Deno.remove(tmp).catch(() => {}); // ours; gone after a rename
    }
    await Deno.chmod(path, 0o600).catch(() => {});
    return { value, source: "generated" };
  }
}
