/**
 * `MigrationApp`: what a migration's `up(app)` and `down(app)` get — the
 * scripts' `ScriptApp` (entities, db, log, error) plus `app.schemas`, the
 * schemas API as calls. Everything runs in the migration's transaction.
 * Registering routes, middleware, hooks, jobs or helpers is refused: a
 * migration runs once; those belong in a script.
 *
 * @module
 */

import type { Core } from "../core.ts";
import { MoonbaseError } from "../errors.ts";
import { Router } from "../http/router.ts";
import { RecordEvents } from "../records/events.ts";
import { shownSchema } from "../schema/shown.ts";
import type { EntitySchema } from "../schema/types.ts";
import {
  type ExtensionSet,
  type ScriptApp,
  scriptApp,
} from "../extend/script_app.ts";
import type { Handler } from "../http/context.ts";

/** The schemas API as calls, taking and returning its bodies. */
export interface SchemaCalls {
  /** A schema by id or name, as `GET /api/v1/schemas/<id>` shows it. */
  get(idOrName: string): EntitySchema | undefined;
  /** Every schema, as `GET /api/v1/schemas` lists them. */
  all(): EntitySchema[];
  /**
   * Creates an entity (`POST /api/v1/schemas`). Ids the body gives (the
   * entity's, its fields' and indexes') are kept when free, so the schema
   * has the same ids wherever the migration runs.
   */
  create(body: Record<string, unknown>): Promise<EntitySchema>;
  /** Changes an entity (`PATCH /api/v1/schemas/<id>`); a new field keeps the id it is given. */
  update(
    idOrName: string,
    body: Record<string, unknown>,
  ): Promise<EntitySchema>;
  /** Deletes an entity and its records (`DELETE /api/v1/schemas/<id>`). */
  delete(idOrName: string): Promise<void>;
}

/** What a migration's `up` and `down` receive. */
export interface MigrationApp extends ScriptApp {
  readonly schemas: SchemaCalls;
}

/** The schema calls over the app's registry (every change keeps given ids). */
export function schemaCalls(core: Pick<Core, "schemas">): SchemaCalls {
  const registry = core.schemas;
  const one = async (
    change: Parameters<typeof registry.apply>[0],
  ): Promise<EntitySchema> => {
    const { results } = await registry.apply(change);
    return shownSchema(registry.get(results[0]!.id)!.schema);
  };
  return {
    get: (idOrName) => {
      const e = registry.get(idOrName);
      return e && shownSchema(e.schema);
    },
    all: () => registry.all().map((e) => shownSchema(e.schema)),
    create: (body) =>
      one(() => [{ action: "create", input: body, keepIds: true }]),
    update: (idOrName, body) =>
      one(() => [{
        action: "update",
        entity: idOrName,
        input: body,
        keepIds: true,
      }]),
    delete: async (idOrName) => {
      await registry.apply(() => [{ action: "delete", entity: idOrName }]);
    },
  };
}

/** The app of migration `name` (its log lines name it). */
export function migrationApp(core: Core, name: string): MigrationApp {
  // Registrations go nowhere: each one is refused below.
  const set: ExtensionSet = {
    routes: new Router<Handler<Core>>(),
    middleware: [],
    events: new RecordEvents(),
    crons: [],
    helpers: new Map(),
    builtin: new Set<string>(),
    taken: new Map(),
    setups: [],
  };
  const base = scriptApp(core, set, name);
  const refuse = (what: string) => (): never => {
    throw new MoonbaseError(
      "invalid",
      `Cannot ${what} in migration ${name}: a migration runs once; put it in a script (--scriptsDir)`,
    );
  };
  return {
    ...base,
    route: refuse("add a route"),
    use: refuse("add middleware"),
    onRecord: refuse("add a record hook"),
    cron: refuse("add a cron job"),
    helper: refuse("add a rule helper"),
    schemas: schemaCalls(core),
  };
}
