/**
 * Moonbase as a library: create an app, extend it with routes, serve it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createApp } from "moonbase/mod.ts";
 * const app = await createApp({ dataDir: await Deno.makeTempDir(), quiet: true });
 * app.route("GET", "/api/hello", () => new Response("hi"));
 * const res = await app.handler(new Request("http://localhost/api/hello"));
 * assert.ok(await res.text() === "hi");
 * await app.close();
 * ```
 *
 * @module
 */

import { type Core, createCore, VERSION } from "./lib/core.ts";
import type { AppConfig } from "./lib/config.ts";
import type { Handler } from "./lib/http/context.ts";
import {
  type ConnInfo,
  createHandler,
  type Lifecycle,
} from "./lib/http/handler.ts";
import { listen, Server } from "./lib/http/server.ts";
import { limitsOf } from "./lib/http/limits.ts";
import { buildRouter } from "./routes/mod.ts";
import { isConnectionLoss } from "./lib/db/connection_loss.ts";
import { Extensions } from "./lib/extend/runtime.ts";
import {
  STRAY_AGE_MS,
  StraySweeps,
  sweepFiles,
  sweepGraceMs,
} from "./lib/files/sweep.ts";
import { inRequest } from "./lib/http/request_scope.ts";
import { Migrations } from "./lib/migrations/runner.ts";
import type { Entity } from "./lib/records/entity.ts";
import { type InternalApp, linkInternalApp } from "./lib/internal_app.ts";

export { Entity } from "./lib/records/entity.ts";
export type { LibraryRead, LibraryWrite } from "./lib/records/entity.ts";
export { MoonbaseError } from "./lib/errors.ts";
export { json, noContent } from "./lib/http/envelope.ts";
export type { AppConfig } from "./lib/config.ts";
export type { Context, Handler } from "./lib/http/context.ts";
export type { AuthValue } from "./lib/caller.ts";
export type {
  EntitySchema,
  FieldDef,
  FieldType,
  Rule,
  Rules,
} from "./lib/schema/types.ts";
export type { Registry } from "./lib/records/registry.ts";
export type { ScriptApp, ScriptHandler } from "./lib/extend/script_app.ts";
export type { MigrationApp, SchemaCalls } from "./lib/migrations/app.ts";
export type {
  RecordEvent,
  RecordEventName,
  RecordHook,
} from "./lib/records/events.ts";
export type { Middleware } from "./lib/http/middleware.ts";
export { VERSION };

/**
 * A Moonbase app as an embedder (or a test) uses it: what `createApp`
 * returns. This is the whole public surface; the services behind it
 * (storage, sessions, the registry, …) are internal and may change in any
 * release (docs/guide/embedding.md).
 */
export interface App {
  /**
   * The entities (tables) by id or name: `Entity` objects whose record
   * operations run below access rules (`{ as }` applies them), and the
   * schema changes of the schemas API.
   */
  readonly entities: AppEntities;
  /** @deprecated The older name of {@link App.entities} (the same object). */
  readonly schemas: AppEntities;
  /** Lines in the system logs (`GET /api/v1/sys/logs`). */
  readonly log: AppLog;
  /** The request handler (usable with `Deno.serve` or called directly). */
  handler(req: Request, info?: ConnInfo): Promise<Response>;
  /**
   * Adds a custom route (`:params` allowed); it may replace a built-in one.
   * `ctx.app` is internal: reach entities through the `App` instead.
   */
  route(method: string, path: string, handler: Handler<unknown>): void;
  /**
   * Starts listening; resolves once the server is up. Connections are held
   * to the config's limits (header, idle and body timeouts, a cap).
   */
  serve(
    options?: { port?: number; hostname?: string; signal?: AbortSignal },
  ): Promise<Deno.HttpServer<Deno.NetAddr>>;
  /**
   * Graceful stop: no new connections, idle ones close at once, new
   * requests on open ones get 503, requests in flight (bodies included)
   * finish (up to `timeoutMs`, then their connections are closed), then the
   * database closes.
   */
  stop(server: Deno.HttpServer, timeoutMs?: number): Promise<void>;
  /** Closes the app (database, timers, scripts) without a server to drain. */
  close(): Promise<void>;
}

/** The entities of an app (`App.entities`). */
export interface AppEntities {
  /** An entity by id or name (case-insensitive); undefined when there is none. */
  get(idOrName: string): Entity | undefined;
  /** Every entity, system ones first. */
  all(): Entity[];
  /** Creates an entity from a schema object (`POST /api/v1/schemas`). */
  create(schema: Record<string, unknown>): Promise<Entity>;
  /** Changes an entity by a partial schema (`PATCH /api/v1/schemas/<id>`). */
  update(idOrName: string, changes: Record<string, unknown>): Promise<Entity>;
  /** Deletes an entity and its records (`DELETE /api/v1/schemas/<id>`). */
  remove(idOrName: string): Promise<void>;
}

/** System log lines of an app (`App.log`). */
export interface AppLog {
  info(message: string, data?: Record<string, unknown>): void;
  warn(message: string, data?: Record<string, unknown>): void;
  error(message: string, data?: Record<string, unknown>): void;
  /** Resolves once the lines written so far are stored. */
  flush(): Promise<void>;
}

/** The public face of an app's internals (see {@link App}). */
function publicApp(internal: InternalApp): App {
  const registry = internal.schemas;
  const entities: AppEntities = Object.freeze({
    get: (idOrName: string) => registry.get(idOrName),
    all: () => registry.all(),
    create: (schema: Record<string, unknown>) => registry.create(schema),
    update: (idOrName: string, changes: Record<string, unknown>) =>
      registry.update(idOrName, changes),
    remove: (idOrName: string) => registry.remove(idOrName),
  });
  const log = internal.log;
  const app: App = Object.freeze({
    entities,
    schemas: entities,
    log: Object.freeze({
      info: (message: string, data?: Record<string, unknown>) =>
        log.info(message, data),
      warn: (message: string, data?: Record<string, unknown>) =>
        log.warn(message, data),
      error: (message: string, data?: Record<string, unknown>) =>
        log.error(message, data),
      flush: () => log.flush(),
    }),
    handler: internal.handler,
    route: (method: string, path: string, handler: Handler<unknown>) =>
      internal.route(method, path, handler),
    serve: (
      options?: { port?: number; hostname?: string; signal?: AbortSignal },
    ) => internal.serve(options),
    stop: (server: Deno.HttpServer, timeoutMs?: number) =>
      internal.stop(server, timeoutMs),
    close: () => internal.close(),
  });
  linkInternalApp(app, internal);
  return app;
}

/**
 * Creates an app: opens the database, loads schemas, sweeps the files its
 * database recorded that no record references (lib/files/sweep.ts; never
 * another database's), builds the routes, loads the scripts and applies
 * pending migration files (a failure stops it with one line naming the
 * file).
 */
export async function createApp(config: AppConfig = {}): Promise<App> {
  return publicApp(await startApp(config));
}

/** Builds the app with its internals (what `createApp` wraps). */
async function startApp(config: AppConfig): Promise<InternalApp> {
  const core = await createCore(config);
  if ((config.peers?.index ?? 0) === 0) {
    try {
      // Another server on the same database and directory may have uploads
      // in flight (either database): spare recent files.
      await sweepFiles(
        core.storage,
        core.schemas,
        core.files,
        core.now,
        sweepGraceMs(core.config.bodyDeadline),
      );
    } catch (err) {
      await core.close();
      throw err;
    }
    // Files left behind while serving (a store that did not answer) go an
    // hour later, without waiting for a restart.
    const tuning = core.config.filesTuning;
    const ageMs = tuning?.strayAgeMs ??
      Math.max(STRAY_AGE_MS, sweepGraceMs(core.config.bodyDeadline));
    const strays = new StraySweeps(
      (minAgeMs) =>
        sweepFiles(core.storage, core.schemas, core.files, core.now, minAgeMs),
      core.files,
      {
        everyMs: tuning?.sweepEveryMs,
        ageMs,
        failed: (err) =>
          core.log.warn("Cannot sweep files", {
            error: err instanceof Error ? err.message : String(err),
          }),
      },
    );
    strays.start();
    const closeCore = core.close;
    const sweeps = strays;
    (core as { close: () => Promise<void> }).close = async () => {
      await sweeps.stop();
      await closeCore();
    };
  }
  const router = buildRouter(core);
  const life: Lifecycle = { inFlight: 0, draining: false };
  const handler = createHandler(
    core,
    router,
    (err, where) =>
      core.log.error("unhandled error", {
        ...where,
        stack: err instanceof Error ? err.stack ?? err.message : String(err),
      }),
    life,
    () => core.extensions,
  );
  const app: InternalApp = Object.assign(core, {
    handler,
    async stop(server: Deno.HttpServer, timeoutMs = 10_000) {
      life.draining = true;
      // Realtime streams never end on their own: end them first.
      core.realtime?.hub.closeAll();
      const deadline = Date.now() + timeoutMs;
      // Moonbase's server stops accepting and closes idle connections now;
      // the others close once their response is out.
      const down = server instanceof Server ? server.shutdown() : undefined;
      if (life.inFlight > 0) {
        await new Promise<void>((resolve) => {
          life.idle = resolve;
          setTimeout(resolve, timeoutMs);
        });
      }
      if (down) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          down,
          new Promise((r) =>
            timer = setTimeout(r, Math.max(0, deadline - Date.now()))
          ),
        ]);
        clearTimeout(timer);
        await (server as Server).close();
      } else await server.shutdown();
      await core.close();
    },
    route(method: string, path: string, h: Handler<Core>) {
      // The program's code may act `{ as }` the caller: in the request's scope.
      router.add(
        method.toUpperCase(),
        path,
        (ctx) => inRequest(ctx, () => h(ctx)),
      );
    },
    serve(
      options: { port?: number; hostname?: string; signal?: AbortSignal } = {},
    ) {
      return Promise.resolve(listen(handler, {
        port: options.port ?? 7070,
        hostname: options.hostname ?? "0.0.0.0",
        signal: options.signal,
        limits: limitsOf(core.config),
        bodies: core.bodies,
        webSockets: core.config.webSocket,
        log: (level, message, data) => core.log[level](message, data),
      }));
    },
  });
  // A lost database connection must not bring the server down: postgres.js may
  // reject a promise nobody awaits when a socket resets. Log it and go on.
  // Only a lost connection is swallowed: any other rejection belongs to the
  // program (an embedder's own top-level error must end it, not hang it);
  // the `moonbase serve` command adds its own catch-all (see main.ts).
  const onUnhandled = (e: PromiseRejectionEvent) => {
    if (!isConnectionLoss(e.reason)) return;
    e.preventDefault();
    const err = e.reason;
    core.log.warn("connection lost (unhandled rejection)", {
      stack: err instanceof Error ? err.stack ?? err.message : String(err),
    });
  };
  globalThis.addEventListener("unhandledrejection", onUnhandled);
  const close = app.close;
  app.close = async () => {
    globalThis.removeEventListener("unhandledrejection", onUnhandled);
    await close();
  };
  const extensions = new Extensions(core, router.routes());
  const closeApp = app.close;
  app.close = async () => {
    await extensions.close();
    await closeApp();
  };
  try {
    // A script that fails to load stops start-up, in --dev too: serving
    // without it would drop what it guards (a middleware that refuses
    // requests, a hook that checks writes). In --dev, a reload that fails
    // keeps the scripts loaded before.
    const set = await extensions.load();
    // Pending migration files, before anything is served: with the scripts'
    // helpers and hooks in force, as for any write. One isolate applies
    // them (the others start once it serves); several instances on one
    // database each run a migration at most once between them.
    if ((core.config.peers?.index ?? 0) === 0) {
      await new Migrations(core).up((name) =>
        core.log.info("migration applied", { name })
      );
    }
    for (const { name, setup } of set.setups) {
      try {
        await setup(app);
      } catch (err) {
        throw new Error(
          `Cannot run setup() of ${name}: ${
            err instanceof Error ? err.message : err
          }`,
        );
      }
    }
  } catch (err) {
    await app.close();
    throw err;
  }
  // Once the scripts' helpers are known: stored rules that read a name that
  // does not exist (saved by an older version) are served as saved.
  if ((core.config.peers?.index ?? 0) === 0) {
    for (const p of core.schemas.ruleProblems()) {
      core.log.warn(
        `the ${p.op} rule of ${p.entity} reads a name that does not exist (served as saved; an admin should change it): ${p.problem}`,
        { entity: p.entity, op: p.op },
      );
    }
  }
  if (core.config.dev) extensions.watch();
  return app;
}
