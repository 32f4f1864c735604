/**
 * `--dev`: every schema change made through the schemas API (the
 * dashboard's included) is written as a migration file — an `up` that
 * makes the change and a `down` that undoes it — and recorded as applied
 * here, so a team commits its schema with its code and every other server
 * gets it from `moonbase migrate up` or its next start.
 *
 * The calls are planned as an import would plan them (the schemas before
 * and after, matched by id), with every id written out: applied elsewhere
 * they make the same ids, so later migrations find their fields by id.
 *
 * @module
 */

import type { Core } from "../core.ts";
import type { AppliedChanges, SchemaChange } from "../records/registry.ts";
import { planImport } from "../records/schema_import.ts";
import { shownSchema } from "../schema/shown.ts";
import type { EntitySchema } from "../schema/types.ts";
import { writeMigration } from "./files.ts";
import { recordApplied } from "./runner.ts";

/** A schema as a migration file writes it: no timestamps, no built-in fields. */
function written(schema: EntitySchema): Record<string, unknown> {
  const { created: _c, updated: _u, is_system: _s, ...rest } = shownSchema(
    schema,
  );
  return {
    ...rest,
    fields: schema.type === "view"
      ? []
      : schema.fields.filter((f) => !f.system),
  };
}

/** The calls that turn the schemas `from` into `to`. */
function callsBetween(
  from: readonly EntitySchema[],
  to: readonly EntitySchema[],
): SchemaChange[] {
  const own = (list: readonly EntitySchema[]) =>
    list.filter((s) => !s.is_system).map((s) =>
      written(s) as Record<string, unknown> & EntitySchema
    );
  return planImport(own(from), {
    schemas: own(to),
    deleteMissing: true,
    dryRun: false,
  }).changes;
}

/** TypeScript for one call. */
function callText(c: SchemaChange, indent = "  "): string {
  const body = (v: unknown) =>
    JSON.stringify(v, null, 2).replaceAll("\n", `\n${indent}`);
  if (c.action === "create") {
    return `${indent}await app.schemas.create(${body(c.input)});`;
  }
  if (c.action === "update") {
    return `${indent}await app.schemas.update(${JSON.stringify(c.entity)}, ${
      body(c.input)
    });`;
  }
  return `${indent}await app.schemas.delete(${JSON.stringify(c.entity)});`;
}

/** The text of a migration file for the change `applied` made. */
export function migrationText(
  summary: string,
  applied: Pick<AppliedChanges, "before" | "after">,
): string | undefined {
  const up = callsBetween(applied.before, applied.after);
  if (up.length === 0) return undefined;
  const down = callsBetween(applied.after, applied.before);
  const recreates = down.some((c) => c.action === "create") &&
    up.some((c) => c.action === "delete");
  return `/**
 * ${summary}: written by \`moonbase --dev\` for a schema change made
 * through the API or the dashboard. Applied once, in one transaction, by
 * \`moonbase migrate up\` or when a server starts (docs/guide/migrations.md).
 */

// deno-lint-ignore no-explicit-any
type App = any;

export async function up(app: App): Promise<void> {
${up.map((c) => callText(c)).join("\n")}
}

export async function down(app: App): Promise<void> {
${
    recreates
      ? "  // Recreates what up deleted: the schema, not its records.\n"
      : ""
  }${down.map((c) => callText(c)).join("\n")}
}
`;
}

/** What the writer reads of the app. */
export type DevHost = Pick<Core, "config" | "log" | "storage">;

/**
 * In `--dev`, writes the migration of a schema change the API made
 * (`name`: the file's name part, e.g. `create_posts`) and records it as
 * applied. A failure is logged, not thrown: the change itself is done.
 */
export async function writeDevMigration(
  core: DevHost,
  applied: AppliedChanges,
  name: string,
): Promise<void> {
  if (!core.config.dev) return;
  const dir = core.config.migrationsDir;
  try {
    const text = migrationText(name.replaceAll("_", " "), applied);
    if (!text) return;
    const file = await writeMigration(dir, safeName(name), text);
    await recordApplied(core.storage, file.name);
    core.log.info("migration written", { file: file.file });
  } catch (err) {
    core.log.error(
      `Cannot write the migration of this schema change: ${
        err instanceof Error ? err.message.split("\n")[0] : err
      } (write it by hand in ${dir})`,
      { migrationsDir: dir },
    );
  }
}

/** A file name part from an entity name (64 characters at most). */
function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 64);
}
