/**
 * The public `App` that `createApp` (mod.ts) returns: what an embedder may
 * use of an app (docs/guide/embedding.md), and the frozen object that gives
 * it over the app's internals (lib/internal_app.ts).
 *
 * @module
 */

import type { Handler } from "./http/context.ts";
import type { ConnInfo } from "./http/handler.ts";
import type { Entity } from "./records/entity.ts";
import { type InternalApp, linkInternalApp } from "./internal_app.ts";

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

/**
 * The public face of an app's internals (see {@link App}): a frozen object
 * of its own, linked to them for `internalApp`.
 */
export function publicApp(internal: InternalApp): App {
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
