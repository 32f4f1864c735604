/**
 * `ScriptApp`: what an extension script's default export receives. Its
 * names are a public contract (scripts written against it keep working);
 * each script gets its own, so routes, hooks, jobs and log lines know the
 * file they come from.
 *
 * @module
 */

import type { Core } from "../core.ts";
import { MoonbaseError } from "../errors.ts";
import type { Row, SqlValue } from "../db/storage.ts";
import type { Context } from "../http/context.ts";
import { json } from "../http/envelope.ts";
import type { Middleware } from "../http/middleware.ts";
import type { Entity } from "../records/entity.ts";
import { current } from "../records/write_scope.ts";
import type { RecordEventName, RecordHook } from "../records/events.ts";
import { type CronJob, scheduleProblem } from "./cron.ts";
import type { Handler } from "../http/context.ts";
import type { Router } from "../http/router.ts";
import type { RecordEvents } from "../records/events.ts";

/** What the scripts registered (one generation: a reload builds a new one). */
export interface ExtensionSet {
  readonly routes: Router<Handler<Core>>;
  readonly middleware: Middleware<Core>[];
  readonly events: RecordEvents;
  readonly crons: CronJob[];
  readonly helpers: Map<string, ScriptHelper>;
  /** The built-in routes (`METHOD /shape`), which scripts may not replace. */
  readonly builtin: ReadonlySet<string>;
  /** Routes scripts took (`METHOD /shape` → script). */
  readonly taken: Map<string, string>;
  /** The scripts' `setup(app)` functions (older scripts), run by mod.ts. */
  readonly setups: { name: string; setup: (app: unknown) => unknown }[];
}

/**
 * A script route's handler: a `Response`, or a value sent as 200 in the
 * envelope. Its `ctx.app` is `unknown`: the services behind it are internal
 * (docs/guide/embedding.md); a script reaches entities, SQL and logs through
 * the `ScriptApp` it received.
 */
export type ScriptHandler = (ctx: Context<unknown>) => unknown;

/** A rule helper (synchronous: rules do not wait for promises). */
export type ScriptHelper = (...args: unknown[]) => unknown;

/** The extension API a script's default export receives. */
export interface ScriptApp {
  /** Adds a route (`:params` in the path); it may not replace a built-in one. */
  route(method: string, path: string, handler: ScriptHandler): void;
  /** Wraps every request, built-in routes included, in registration order. */
  use(middleware: Middleware<unknown>): void;
  /** Runs `fn` at a moment of every write of `entity` (a name, or `"*"`). */
  onRecord(event: RecordEventName, entity: string, fn: RecordHook): void;
  /** Runs `fn` on a cron schedule (5 fields, or 6 with seconds first). */
  cron(name: string, schedule: string, fn: () => unknown): void;
  /** Adds a rule helper, callable from rule expressions as `name(…)`. */
  helper(name: string, fn: ScriptHelper): void;
  /** The entities: `get(name)` gives the Entity (`list`, `read`, `create`, …; `{ as }` applies rules). */
  readonly entities: {
    get(name: string): Entity | undefined;
    all(): Entity[];
  };
  /** SQL with `?` placeholders (values only as parameters). */
  readonly db: {
    query(sql: string, params?: readonly SqlValue[]): Promise<Row[]>;
    run(sql: string, params?: readonly SqlValue[]): Promise<number>;
  };
  /** Lines in the system logs, tagged with the script's name. */
  readonly log: {
    debug(message: string, data?: Record<string, unknown>): void;
    info(message: string, data?: Record<string, unknown>): void;
    warn(message: string, data?: Record<string, unknown>): void;
    error(message: string, data?: Record<string, unknown>): void;
  };
  /** An error to throw: the client gets `status` and `message` in the envelope. */
  error(status: number, message: string): MoonbaseError;
}

const HELPER_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]);
const JOB_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

/** Builds the ScriptApp of one script, registering into `set`. */
export function scriptApp(
  core: Core,
  set: ExtensionSet,
  source: string,
): ScriptApp {
  const fail = (what: string): never => {
    throw new Error(`Cannot load script ${source}: ${what}`);
  };
  const logAt =
    (level: "debug" | "info" | "warn" | "error") =>
    (message: string, data?: Record<string, unknown>) =>
      core.log.app(level, String(message), { ...data, script: source });
  return {
    route(method, path, handler) {
      const m = String(method).toUpperCase();
      if (!METHODS.has(m)) fail(`route method ${JSON.stringify(method)}`);
      if (typeof path !== "string" || !path.startsWith("/")) {
        fail(`route path ${JSON.stringify(path)} must start with /`);
      }
      if (typeof handler !== "function") fail(`route ${m} ${path}: no handler`);
      const key = `${m} ${shape(path)}`;
      if (set.builtin.has(key)) fail(`route ${m} ${path} is built in`);
      if (set.taken.has(key)) {
        fail(`route ${m} ${path} is already added by ${set.taken.get(key)}`);
      }
      set.taken.set(key, source);
      set.routes.add(m, path, async (ctx) => {
        const out = await handler(ctx);
        return out instanceof Response ? out : json(200, out ?? null);
      });
    },
    use(middleware) {
      if (typeof middleware !== "function") fail("use() needs a function");
      set.middleware.push(middleware);
    },
    onRecord(event, entity, fn) {
      try {
        set.events.on(event, entity, fn, source);
      } catch (err) {
        fail(err instanceof Error ? err.message : String(err));
      }
    },
    cron(name, schedule, fn) {
      if (typeof name !== "string" || !JOB_NAME.test(name)) {
        fail(`cron name ${JSON.stringify(name)}`);
      }
      if (set.crons.some((j) => j.name === name)) {
        fail(`cron ${name} is already added`);
      }
      const problem = scheduleProblem(schedule);
      if (problem) {
        fail(`cron ${name} schedule ${JSON.stringify(schedule)}: ${problem}`);
      }
      if (typeof fn !== "function") fail(`cron ${name}: no function`);
      const job: CronJob = { name, schedule, fn, source };
      set.crons.push(job);
    },
    helper(name, fn) {
      if (
        typeof name !== "string" || !HELPER_NAME.test(name) ||
        ["auth", "req", "record"].includes(name)
      ) fail(`helper name ${JSON.stringify(name)} is not allowed`);
      if (typeof fn !== "function") fail(`helper ${name}: not a function`);
      set.helpers.set(name, fn);
    },
    entities: {
      get: (name) => core.schemas.byName(name),
      all: () => core.schemas.all(),
    },
    db: {
      // Inside a before-hook: the write's transaction.
      query: (sql, params) => current(core.storage).query(sql, params),
      run: (sql, params) => current(core.storage).run(sql, params),
    },
    log: {
      debug: logAt("debug"),
      info: logAt("info"),
      warn: logAt("warn"),
      error: logAt("error"),
    },
    error: (status, message) => MoonbaseError.withStatus(status, message),
  };
}

/** A route pattern with its parameter names erased: `/a/:x` → `/a/:`. */
export function shape(path: string): string {
  return "/" +
    path.split("/").filter(Boolean).map((s) => s.startsWith(":") ? ":" : s)
      .join("/");
}
