/**
 * Configuration of an app, with the defaults of the CLI.
 *
 * Over 350 lines, one idea: the options of an app; kept whole because
 * `AppConfig` documents each option (one per CLI option) beside its type, and
 * `resolveConfig` fills their defaults in the same order.
 *
 * @module
 */

import { MoonbaseError } from "./errors.ts";
import { defaultMaxConnections } from "./http/limits.ts";
import type { PeerConfig } from "./cluster/link.ts";
import type { OAuth2Tuning } from "./auth/oauth2/service.ts";
import type { SenderPace } from "./mail/sender.ts";
import type { SendLimits } from "./mail/transport.ts";
import type { S3Credentials } from "./files/s3_backend.ts";

/** Options of `createApp` (every CLI option has one). */
export interface AppConfig {
  /** Data directory (SQLite file, JWT secret, uploaded files). Default `./data`. */
  dataDir?: string;
  /** `"PSQL"` for PostgreSQL; SQLite otherwise. */
  database?: string;
  /**
   * Where uploaded files live: `local` (`<dataDir>/files`, the default) or
   * `s3://<bucket>[/<prefix>]?endpoint=<url>&region=<region>&path_style=true|false`
   * (docs/operations/files.md).
   */
  files?: string;
  /**
   * Where backups live: `local` (`<dataDir>/backups`, the default) or an S3
   * bucket and prefix in the form of `files` (not the same bucket and
   * prefix as `files`; docs/operations/backups.md).
   */
  backups?: string;
  /**
   * The key of an S3 file store or backup store (default: `MB_S3_ACCESS_KEY_ID` /
   * `MB_S3_SECRET_ACCESS_KEY`, else `AWS_ACCESS_KEY_ID` /
   * `AWS_SECRET_ACCESS_KEY`).
   */
  filesCredentials?: S3Credentials;
  /**
   * Internal (tests): an S3 file store's part size and probe interval, and
   * how often and after how long files left behind are swept. Not a CLI option.
   */
  filesTuning?: {
    partSize?: number;
    probeEveryMs?: number;
    sweepEveryMs?: number;
    strayAgeMs?: number;
  };
  /** PostgreSQL connection URL. */
  connection?: string;
  /** Directory served at `/`. */
  publicDir?: string;
  /** Directory of JavaScript extension scripts. */
  scriptsDir?: string;
  /**
   * Directory of migration files (`NNNN_name.ts`, docs/guide/migrations.md),
   * applied at start before serving. Default `./migrations`.
   */
  migrationsDir?: string;
  /** Development mode. */
  dev?: boolean;
  /** Token lifetime in seconds (default 3600). */
  tokenTtl?: number;
  /** Allowed CORS origins (default `["*"]`). */
  corsOrigins?: string[];
  /** Largest JSON body in bytes (default 1 MiB). */
  maxBodySize?: number;
  /** Largest upload in bytes (default 10 MiB). */
  maxUploadSize?: number;
  /** Most requests in one batch (`POST /api/v1/batch`; default 100). */
  batchMaxRequests?: number;
  /** Trust `X-Forwarded-For` for the client IP. */
  trustProxy?: boolean;
  /** JWT secret (default: `MB_JWT_SECRET`, else generated in dataDir). */
  jwtSecret?: string;
  /** Print nothing at start. */
  quiet?: boolean;
  /**
   * Take over a data directory that belongs to another database (its
   * `database.json` names that one): the directory is bound to this
   * database from now on; the other database's files stay untouched.
   * Without it such a directory is refused (default false).
   */
  rebindDataDir?: boolean;
  /**
   * PostgreSQL pool size of each isolate (default: CPU cores, at most 10,
   * divided among the `workers`, at least 2); lists under a filter open a
   * twin of each connection on first use (`Storage.queryCustomPlan`). Fewer
   * connections carry more pipelined queries per socket write; measured on 2
   * cores, 2 connections served ~30% more than 10.
   */
  poolSize?: number;
  /**
   * PostgreSQL: seconds any request statement may run before the database
   * cancels it (503); 0 for no limit (default 30). Schema changes are exempt.
   * A batch's whole transaction is held to it too (on SQLite as well).
   */
  statementTimeout?: number;
  /** Least severe level logged: trace, debug, info (default), warn, error. */
  logLevel?: "trace" | "debug" | "info" | "warn" | "error";
  /** Days logs are kept (default 7). */
  logRetentionDays?: number;
  /** Most log rows kept (default 100000). */
  logMaxRows?: number;
  /**
   * Log the dashboard's own requests too: its pages and assets (`GET /mb…`)
   * and its logs page's polls, when they succeed (default false: an open
   * dashboard would fill the log with itself). Errors are always logged.
   */
  logDashboard?: boolean;
  /** Seconds a new connection may take to send a complete request head (default 10). */
  headerTimeout?: number;
  /** Seconds an idle keep-alive connection is kept open (default 30). */
  idleTimeout?: number;
  /** Longest pause, in seconds, while a request body arrives (default 30; then 408). */
  bodyTimeout?: number;
  /** Seconds a whole request body may take (default 600; then 408). */
  bodyDeadline?: number;
  /**
   * Least average rate (bytes per second) a request body must keep once it
   * has taken `bodyTimeout` (default 500; 0: none), else 408: a body trickled
   * a byte at a time would otherwise hold its connection until `bodyDeadline`.
   */
  bodyMinRate?: number;
  /**
   * Most connections open at once (default 1024, lowered below the
   * open-file limit on Linux). At the cap the idlest connection is closed
   * to make room, or new connections wait in the listen backlog. With
   * several `workers` it is the process's cap: each isolate takes its share
   * (rounded up), as they share the process's descriptors.
   */
  maxConnections?: number;
  /**
   * Internal (tests): this machine's clock in ms since the epoch (default
   * `Date.now`). Tokens and revocations use it corrected to the database's
   * clock. Not a CLI option.
   */
  clock?: () => number;
  /**
   * How scripts are imported: `file` (`import()`), or `source` (read,
   * strip types, import from a `data:` URL: what a compiled binary does).
   * Default: `MB_SCRIPT_LOADER`, else `source` in a compiled binary.
   */
  scriptLoader?: "file" | "source";
  /** Realtime subscriptions and the event log behind them (default true). */
  realtime?: boolean;
  /** Topics one realtime connection may follow (default 100). */
  realtimeMaxTopics?: number;
  /** Realtime connections per token, or per client address for guests (default 20). */
  realtimeMaxConnections?: number;
  /** Realtime connections per user, across all their tokens (default 20). */
  realtimeMaxPerUser?: number;
  /**
   * Realtime connections per client address, guests and users together
   * (default 100; behind `trustProxy`, the forwarded address).
   */
  realtimeMaxPerAddress?: number;
  /** Seconds between SSE heartbeats (default 15). */
  realtimeHeartbeat?: number;
  /** Bytes a realtime connection may have waiting before it is dropped as too slow (default 1 MiB). */
  realtimeBuffer?: number;
  /** Bytes of events the realtime log keeps at most (default 64 MiB; the newest event always stays). */
  realtimeLogBytes?: number;
  /** Bytes of missed events a realtime resume replays at most; past it the client is reset (default 8 MiB). */
  realtimeResumeBytes?: number;
  /**
   * WebSocket upgrades (`/api/v1/realtime/ws`), default false. Each
   * connection then holds a second descriptor (a duplicate the upgrade moves
   * to: lib/http/upgrade.ts), so a connection cap that follows the
   * open-file limit is halved; every connection limit stays enforced.
   */
  webSocket?: boolean;
  /**
   * Most pixels (width × height) of an image a thumbnail is made of
   * (default 40 million); a larger one is not decoded and its original is
   * served.
   */
  thumbMaxPixels?: number;
  /**
   * Thumbnails made at once by the process (default 2; with several
   * `workers` each isolate takes its share, at least 1). A few more wait;
   * past that a thumbnail request gets 503 with `Retry-After`.
   */
  thumbConcurrency?: number;
  /** Seconds one thumbnail may take to make (default 10; then the original is served). */
  thumbDeadline?: number;
  /**
   * Isolates `moonbase serve` answers from (default 1; 0: one per CPU core),
   * each listening on the port with SO_REUSEPORT. The serve command starts
   * them; `createApp` builds one isolate's app whatever it says (only the
   * default `poolSize` and the share of `maxConnections` follow it).
   */
  workers?: number;
  /**
   * Internal (the serve command with several workers): this isolate's place
   * in the process. Not a CLI option.
   */
  peers?: PeerConfig;
  /**
   * Internal (tests): the time and size bounds of requests to OAuth2
   * providers, and preset endpoints replaced. Not a CLI option.
   */
  oauth2?: OAuth2Tuning;
  /**
   * Internal (tests): the mail sender's pace (retries, polls, leases) and
   * the time limits of one SMTP send. Not a CLI option.
   */
  mail?: { pace?: Partial<SenderPace>; limits?: Partial<SendLimits> };
}

/** Config with every default applied. */
export type ResolvedConfig =
  & Required<
    Omit<
      AppConfig,
      | "connection"
      | "publicDir"
      | "jwtSecret"
      | "clock"
      | "scriptLoader"
      | "peers"
      | "oauth2"
      | "mail"
      | "filesCredentials"
      | "filesTuning"
    >
  >
  & {
    filesCredentials?: S3Credentials;
    filesTuning?: AppConfig["filesTuning"];
    peers?: PeerConfig;
    oauth2?: OAuth2Tuning;
    mail?: AppConfig["mail"];
    clock?: () => number;
    scriptLoader?: "file" | "source";
    connection?: string;
    publicDir?: string;
    jwtSecret?: string;
  };

/** Applies defaults. */
export function resolveConfig(c: AppConfig): ResolvedConfig {
  return {
    dataDir: c.dataDir ?? "./data",
    database: c.database ?? "SQLITE",
    files: c.files ?? "local",
    backups: c.backups ?? "local",
    filesCredentials: c.filesCredentials,
    filesTuning: c.filesTuning,
    connection: c.connection,
    publicDir: checkedPublicDir(c.publicDir),
    scriptsDir: c.scriptsDir ?? "./scripts",
    migrationsDir: c.migrationsDir ?? "./migrations",
    dev: c.dev ?? false,
    tokenTtl: c.tokenTtl ?? 3600,
    corsOrigins: c.corsOrigins ?? ["*"],
    maxBodySize: c.maxBodySize ?? 1024 * 1024,
    maxUploadSize: c.maxUploadSize ?? 10 * 1024 * 1024,
    batchMaxRequests: c.batchMaxRequests ?? 100,
    trustProxy: c.trustProxy ?? false,
    jwtSecret: c.jwtSecret,
    clock: c.clock,
    scriptLoader: c.scriptLoader,
    quiet: c.quiet ?? false,
    rebindDataDir: c.rebindDataDir ?? false,
    // Several workers: each isolate has a pool; they share the default.
    poolSize: c.poolSize ?? Math.max(
      2,
      Math.ceil(
        Math.min(10, navigator.hardwareConcurrency || 2) /
          workerCount(c.workers),
      ),
    ),
    statementTimeout: c.statementTimeout ?? 30,
    logLevel: c.logLevel ?? "info",
    logRetentionDays: c.logRetentionDays ?? 7,
    logMaxRows: c.logMaxRows ?? 100_000,
    logDashboard: c.logDashboard ?? false,
    headerTimeout: c.headerTimeout ?? 10,
    idleTimeout: c.idleTimeout ?? 30,
    bodyTimeout: c.bodyTimeout ?? 30,
    bodyDeadline: c.bodyDeadline ?? 600,
    bodyMinRate: c.bodyMinRate ?? 500,
    // The process's cap (its descriptors are shared): with several workers
    // they count their connections into one total (lib/workers/serve.ts).
    maxConnections: c.maxConnections ?? defaultMaxConnections(),
    realtime: c.realtime ?? true,
    realtimeMaxTopics: c.realtimeMaxTopics ?? 100,
    realtimeMaxConnections: c.realtimeMaxConnections ?? 20,
    realtimeMaxPerUser: c.realtimeMaxPerUser ?? 20,
    realtimeMaxPerAddress: c.realtimeMaxPerAddress ?? 100,
    realtimeHeartbeat: c.realtimeHeartbeat ?? 15,
    realtimeBuffer: c.realtimeBuffer ?? 1024 * 1024,
    realtimeLogBytes: c.realtimeLogBytes ?? 64 * 1024 * 1024,
    realtimeResumeBytes: c.realtimeResumeBytes ?? 8 * 1024 * 1024,
    webSocket: c.webSocket ?? false,
    thumbMaxPixels: c.thumbMaxPixels ?? 40_000_000,
    thumbConcurrency: c.thumbConcurrency ?? 2,
    thumbDeadline: c.thumbDeadline ?? 10,
    workers: workerCount(c.workers),
    peers: c.peers,
    oauth2: c.oauth2,
    mail: c.mail,
  };
}

/**
 * The number of isolates `workers` asks for: 1 by default, one per CPU core
 * for 0.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { workerCount } from "moonbase/lib/config.ts";
 * assert.equal(workerCount(undefined), 1);
 * assert.equal(workerCount(3), 3);
 * assert.equal(workerCount(0), navigator.hardwareConcurrency || 1);
 * assert.throws(() => workerCount(0.5), /workers must be an integer/);
 * ```
 */
export function workerCount(workers: number | undefined): number {
  if (workers === undefined) return 1;
  if (!Number.isInteger(workers) || workers < 0 || workers > 256) {
    throw new MoonbaseError(
      "invalid",
      "Cannot start: workers must be an integer from 0 to 256 (0: one per CPU core)",
    );
  }
  if (workers === 0) return navigator.hardwareConcurrency || 1;
  return workers;
}

/**
 * Why `dir` cannot be served at `/` (undefined when it can, or is unset).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { publicDirProblem } from "moonbase/lib/config.ts";
 * assert.equal(publicDirProblem(undefined), undefined);
 * assert.equal(publicDirProblem("./no/such/dir"), "no such directory");
 * ```
 */
export function publicDirProblem(dir: string | undefined): string | undefined {
  if (dir === undefined) return undefined;
  try {
    return Deno.statSync(dir).isDirectory ? undefined : "not a directory";
  } catch (err) {
    return err instanceof Deno.errors.NotFound
      ? "no such directory"
      : `cannot read it (${err instanceof Error ? err.name : err})`;
  }
}

/** `dir` when it can be served; a clear error at start otherwise. */
function checkedPublicDir(dir: string | undefined): string | undefined {
  const problem = publicDirProblem(dir);
  if (problem) {
    throw new MoonbaseError(
      "invalid",
      `Cannot serve publicDir ${JSON.stringify(dir)}: ${problem}`,
    );
  }
  return dir;
}
