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
  try {
    const value = (await Deno.readTextFile(path)).trim();
    if (value.length >= 32) return { value, source: "file" };
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  const value = randomToken(32);
  await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
  await Deno.writeTextFile(path, value + "\n", { mode: 0o600 });
  await Deno.chmod(path, 0o600).catch(() => {});
  return { value, source: "generated" };
}
