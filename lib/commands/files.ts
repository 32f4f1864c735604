/**
 * The file store command of the CLI (main.ts): `files migrate --to <store>`
 * copies every stored file from the `--files` store to another
 * (lib/files/migrate.ts), verified and resumable; then the server can
 * start on the new store.
 *
 * @module
 */

import type { AppConfig } from "../config.ts";
import { createCore } from "../core.ts";
import {
  type FilesUrl,
  openBackend,
  parseFilesUrl,
} from "../files/files_url.ts";
import {
  bytesText,
  journalPath,
  migrateFiles,
  stepText,
} from "../files/migrate.ts";
import { UsageMistake } from "./usage.ts";

/** `files migrate --to <store>`: copies the stored files to another store. */
export async function filesCommand(
  config: AppConfig,
  toValue: unknown,
  rest: string[],
): Promise<void> {
  if (rest.join(" ") !== "migrate" || typeof toValue !== "string") {
    throw new UsageMistake("files needs migrate --to <local|s3://…>");
  }
  const toUrl = toValue;
  let to: FilesUrl;
  try {
    to = parseFilesUrl(toUrl);
  } catch (err) {
    throw new UsageMistake((err as Error).message.replace("--files", "--to"));
  }
  const from = parseFilesUrl(config.files ?? "local");
  if (JSON.stringify(to) === JSON.stringify(from)) {
    throw new UsageMistake(
      `files migrate --to ${toUrl}: that is the store in use (--files); name another`,
    );
  }
  // A command: it neither sweeps files nor prunes logs.
  const core = await createCore({ ...config, quiet: true }, "command");
  const target = openBackend(toUrl, core.config.dataDir, {
    timeoutMs: core.config.bodyTimeout * 1000,
  }, config.filesCredentials);
  try {
    await target.check();
    const terminal = Deno.stdout.isTerminal();
    const out = new TextEncoder();
    console.log(
      `Copying files from ${core.files.backend.name} to ${target.name}`,
    );
    const sum = await migrateFiles(
      core.files.ledger,
      core.files.backend,
      target,
      journalPath(core.config.dataDir, target),
      (step) => Deno.stdout.writeSync(out.encode(stepText(step, terminal))),
    );
    if (terminal && sum.total > 0) console.log("");
    console.log(
      `${sum.copied} copied (${
        bytesText(sum.bytes)
      }), ${sum.skipped} already there, ${sum.missing} not in the source, ${sum.failed} failed, of ${sum.total}`,
    );
    if (sum.failed > 0) {
      throw new Error(
        `Cannot migrate every file: ${sum.failed} failed (listed above); run the command again`,
      );
    }
    console.log(`Done: start the server with --files ${toUrl}`);
  } finally {
    await target.close();
    await core.close();
  }
}
