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
import { createHandler, type Lifecycle } from "./lib/http/handler.ts";
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
import type { InternalApp } from "./lib/internal_app.ts";
import { type App, publicApp } from "./lib/app.ts";

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
export type { App, AppEntities, AppLog } from "./lib/app.ts";

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
