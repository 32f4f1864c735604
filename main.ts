/**
 * The `moonbase` command line: `serve`, `admins`, `types`, `backup`,
 * `move-to`, `migrate` and `files migrate`.
 *
 * About 350 lines: the usage text, the option table and the parsing that
 * turns them into an `AppConfig` are one piece (an option is added to all
 * three at once); `serve` itself is lib/workers/command.ts.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { VERSION } from "./mod.ts";
import { type AppConfig, publicDirProblem } from "./lib/config.ts";
import { createCore, hasAdmin } from "./lib/core.ts";
import { StorageUnavailableError } from "./lib/db/storage.ts";
import { MoonbaseError } from "./lib/errors.ts";
import { removeAdmin } from "./lib/auth/admins.ts";
import { isLevel } from "./lib/logs/types.ts";
import { serveCommand } from "./lib/workers/command.ts";
import { allEntities } from "./lib/openapi/described.ts";
import { typesModule } from "./lib/openapi/types_ts.ts";
import { backupCommand, moveToCommand } from "./lib/commands/backup.ts";
import { UsageMistake } from "./lib/commands/usage.ts";
import { filesCommand } from "./lib/commands/files.ts";
import { parseFilesUrl } from "./lib/files/files_url.ts";
import { checkBackupsUrl } from "./lib/backup/backups_url.ts";
import { migrateCommand } from "./lib/commands/migrate.ts";

/** Usage text. */
export const USAGE = `Moonbase ${VERSION} — a self-hosted backend

Usage:
  moonbase [options] serve [--port 7070] [--host 0.0.0.0] [--workers 1]
  moonbase [options] admins --add <email> <password>
  moonbase [options] admins --ls
  moonbase [options] admins --rm <email|id>
  moonbase [options] types [--out <file>]
  moonbase [options] backup create [<name>] [--out <file>]
  moonbase [options] backup list
  moonbase [options] backup restore <file|name>   (with the server stopped)
  moonbase [options] move-to --database PSQL --connection <url>
  moonbase [options] migrate up|down|status
  moonbase [options] migrate create <name>
  moonbase [options] files migrate --to <local|s3://…>

Options:
  --port <port>            listening port (default 7070; 0 picks a free port)
  --host <host>            bind address (default 0.0.0.0)
  --workers <n|auto>       isolates serving on the port (default 1; auto or 0:
                           one per CPU core)
  --dev                    development mode (readable logs, scripts reloaded on
                           change, a migration file written per schema change)
  --database <kind>        PSQL for PostgreSQL (default: SQLite in --dataDir)
  --connection <url>       PostgreSQL connection URL (with --database PSQL)
  --poolSize <n>           PostgreSQL connections (default: CPU cores, 2 to 10)
  --statementTimeout <s>   PostgreSQL: longest statement of a request, and longest
                           batch on both databases (default 30; 0: none)
  --dataDir <dir>          data directory (default ./data); it belongs to the
                           database first used with it (see database.json in it)
  --rebindDataDir          take over a data directory of another database (its
                           files stay untouched); otherwise that is refused
  --files <store>          where uploaded files live: local (default: <dataDir>/files)
                           or s3://<bucket>[/<prefix>]?endpoint=<url>&region=<region>
                           &path_style=true|false (also MB_FILES)
  --backups <store>        where backups live: local (default: <dataDir>/backups) or
                           s3://<bucket>[/<prefix>]?… as for --files, not the same
                           bucket and prefix as --files (also MB_BACKUPS)
  --publicDir <dir>        directory served at /
  --scriptsDir <dir>       directory of JavaScript extension scripts (default ./scripts)
  --migrationsDir <dir>    directory of migration files NNNN_name.ts (default
                           ./migrations); serve applies pending ones first, and
                           with --dev writes one for each schema change
  --tokenTtl <seconds>     token lifetime (default 3600)
  --corsOrigins <list>     comma-separated allowed origins (default *)
  --maxBodySize <bytes>    largest JSON body (default 1048576)
  --maxUploadSize <bytes>  largest upload (default 10485760)
  --batchMaxRequests <n>   most requests in one POST /api/v1/batch (default 100)
  --thumbMaxPixels <n>     largest image (width x height) thumbnails are made of
                           (default 40000000; a larger one answers its original)
  --thumbConcurrency <n>   thumbnails made at once by the process (default 2)
  --thumbDeadline <s>      longest time to make one thumbnail (default 10)
  --trustProxy             take the client IP from X-Forwarded-For
  --headerTimeout <s>      time allowed for a request head (default 10)
  --idleTimeout <s>        idle keep-alive connection lifetime (default 30)
  --bodyTimeout <s>        longest pause within a request body (default 30)
  --bodyDeadline <s>       longest time for a request body (default 600)
  --bodyMinRate <bytes/s>  least average body rate after bodyTimeout (default 500; 0: none)
  --maxConnections <n>     most open connections (default 1024 or ulimit -n - 64)
  --logLevel <level>       trace, debug, info (default), warn or error
  --logRetentionDays <n>   days logs are kept (default 7)
  --logMaxRows <n>         most log rows kept (default 100000)
  --logDashboard           log the dashboard's own page, asset and polling
                           requests too (default: left out unless they fail)
  --realtime <on|off>      realtime subscriptions and their event log (default on)
  --realtimeMaxTopics <n>  topics per realtime connection (default 100)
  --realtimeMaxConnections <n>  realtime connections per token or guest address (default 20)
  --realtimeMaxPerUser <n>  realtime connections per user, across tokens (default 20)
  --realtimeMaxPerAddress <n>  realtime connections per client address (default 100);
                           streams never hold the last tenth of maxConnections
  --realtimeHeartbeat <s>  seconds between SSE heartbeats (default 15)
  --realtimeLogBytes <n>   bytes of events the realtime log keeps (default 64 MiB)
  --realtimeResumeBytes <n>  bytes of missed events a resume replays (default 8 MiB)
  --websocket              serve WebSocket upgrades (/api/v1/realtime/ws); each
                           connection then holds two descriptors
  --out <file>             types: write the TypeScript types there (default:
                           standard output)
  -h, --help               show this help
  -v, --version            show the version

Environment:
  MB_JWT_SECRET            token signing secret (at least 32 characters); set it in production
  MB_FILES                 the --files store when the option is not given
  MB_BACKUPS               the --backups store when the option is not given
  MB_S3_ACCESS_KEY_ID, MB_S3_SECRET_ACCESS_KEY
                           the key of the s3:// stores of files and backups
                           (else AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
                           AWS_SESSION_TOKEN)

files migrate --to <store> copies every stored file from the --files store to
<store>, verified (size and SHA-256); a run again skips verified copies; the
source is never changed. Then start the server with --files <store>.
`;

class UsageError extends UsageMistake {}

function onOff(v: string | undefined, name: string): boolean | undefined {
  if (v === undefined) return undefined;
  if (/^(on|true|1)$/i.test(v)) return true;
  if (/^(off|false|0)$/i.test(v)) return false;
  throw new UsageError(`invalid --${name} ${JSON.stringify(v)}: use on or off`);
}

function logLevelOf(v: string | undefined): AppConfig["logLevel"] {
  if (v === undefined) return undefined;
  if (!isLevel(v)) {
    throw new UsageError(
      `invalid --logLevel ${
        JSON.stringify(v)
      }: use trace, debug, info, warn or error`,
    );
  }
  return v;
}

function int(
  value: string | undefined,
  name: string,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(
      `invalid --${name} ${
        JSON.stringify(value)
      }: expected an integer from ${min} to ${max}`,
    );
  }
  return Number(value);
}

/** A parsed command line. */
export interface Cli {
  command: string | undefined;
  rest: string[];
  values: Record<string, string | boolean | undefined>;
  config: AppConfig;
  port: number;
  host: string;
}

/** Parses argv into a command and a config. */
export function parseCli(args: string[]): Cli {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: {
        port: { type: "string" },
        host: { type: "string" },
        workers: { type: "string" },
        dev: { type: "boolean" },
        database: { type: "string" },
        connection: { type: "string" },
        poolSize: { type: "string" },
        statementTimeout: { type: "string" },
        dataDir: { type: "string" },
        rebindDataDir: { type: "boolean" },
        files: { type: "string" },
        backups: { type: "string" },
        to: { type: "string" },
        publicDir: { type: "string" },
        scriptsDir: { type: "string" },
        migrationsDir: { type: "string" },
        tokenTtl: { type: "string" },
        corsOrigins: { type: "string" },
        maxBodySize: { type: "string" },
        maxUploadSize: { type: "string" },
        batchMaxRequests: { type: "string" },
        thumbMaxPixels: { type: "string" },
        thumbConcurrency: { type: "string" },
        thumbDeadline: { type: "string" },
        trustProxy: { type: "boolean" },
        headerTimeout: { type: "string" },
        idleTimeout: { type: "string" },
        bodyTimeout: { type: "string" },
        bodyDeadline: { type: "string" },
        bodyMinRate: { type: "string" },
        maxConnections: { type: "string" },
        logLevel: { type: "string" },
        logRetentionDays: { type: "string" },
        logMaxRows: { type: "string" },
        logDashboard: { type: "boolean" },
        realtime: { type: "string" },
        realtimeMaxTopics: { type: "string" },
        realtimeMaxConnections: { type: "string" },
        realtimeMaxPerUser: { type: "string" },
        realtimeMaxPerAddress: { type: "string" },
        realtimeHeartbeat: { type: "string" },
        realtimeLogBytes: { type: "string" },
        realtimeResumeBytes: { type: "string" },
        websocket: { type: "boolean" },
        add: { type: "string" },
        ls: { type: "boolean" },
        rm: { type: "string" },
        out: { type: "string" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "v" },
      },
    });
  } catch (err) {
    throw new UsageError(
      err instanceof Error ? err.message.split("\n")[0] : String(err),
    );
  }
  const v = parsed.values;
  const [command, ...rest] = parsed.positionals;
  if (v.database !== undefined && v.database.toUpperCase() !== "PSQL") {
    throw new UsageError(
      `invalid --database ${
        JSON.stringify(v.database)
      }: use PSQL, or omit it for SQLite`,
    );
  }
  if (v.database && !v.connection) {
    throw new UsageError("--database PSQL needs --connection <url>");
  }
  const publicDir = publicDirProblem(v.publicDir);
  if (publicDir) {
    throw new UsageError(
      `invalid --publicDir ${JSON.stringify(v.publicDir)}: ${publicDir}`,
    );
  }
  const files = v.files ?? (Deno.env.get("MB_FILES") || undefined);
  if (files !== undefined) {
    try {
      parseFilesUrl(files);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  const backups = v.backups ?? (Deno.env.get("MB_BACKUPS") || undefined);
  if (backups !== undefined) {
    try {
      checkBackupsUrl(backups, files ?? "local");
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  const config: AppConfig = {
    dataDir: v.dataDir,
    files,
    backups,
    rebindDataDir: v.rebindDataDir,
    database: v.database?.toUpperCase(),
    connection: v.connection,
    poolSize: int(v.poolSize, "poolSize", 1, 100),
    statementTimeout: int(v.statementTimeout, "statementTimeout", 0, 86_400),
    publicDir: v.publicDir,
    scriptsDir: v.scriptsDir,
    migrationsDir: v.migrationsDir,
    dev: v.dev,
    tokenTtl: int(v.tokenTtl, "tokenTtl", 60, 31_536_000),
    corsOrigins: v.corsOrigins?.split(",").map((s) => s.trim()).filter(Boolean),
    maxBodySize: int(v.maxBodySize, "maxBodySize", 1024, 1024 ** 3),
    maxUploadSize: int(v.maxUploadSize, "maxUploadSize", 1024, 64 * 1024 ** 3),
    batchMaxRequests: int(v.batchMaxRequests, "batchMaxRequests", 1, 10_000),
    thumbMaxPixels: int(v.thumbMaxPixels, "thumbMaxPixels", 1, 1_000_000_000),
    thumbConcurrency: int(v.thumbConcurrency, "thumbConcurrency", 1, 64),
    thumbDeadline: int(v.thumbDeadline, "thumbDeadline", 1, 3600),
    trustProxy: v.trustProxy,
    logLevel: logLevelOf(v.logLevel),
    logRetentionDays: int(v.logRetentionDays, "logRetentionDays", 1, 3650),
    logMaxRows: int(v.logMaxRows, "logMaxRows", 100, 100_000_000),
    logDashboard: v.logDashboard,
    headerTimeout: int(v.headerTimeout, "headerTimeout", 1, 3600),
    idleTimeout: int(v.idleTimeout, "idleTimeout", 1, 86_400),
    bodyTimeout: int(v.bodyTimeout, "bodyTimeout", 1, 3600),
    bodyDeadline: int(v.bodyDeadline, "bodyDeadline", 1, 86_400),
    bodyMinRate: int(v.bodyMinRate, "bodyMinRate", 0, 1024 ** 3),
    maxConnections: int(v.maxConnections, "maxConnections", 1, 1_000_000),
    realtime: onOff(v.realtime, "realtime"),
    realtimeMaxTopics: int(v.realtimeMaxTopics, "realtimeMaxTopics", 1, 10_000),
    realtimeMaxConnections: int(
      v.realtimeMaxConnections,
      "realtimeMaxConnections",
      1,
      100_000,
    ),
    realtimeMaxPerUser: int(
      v.realtimeMaxPerUser,
      "realtimeMaxPerUser",
      1,
      100_000,
    ),
    realtimeMaxPerAddress: int(
      v.realtimeMaxPerAddress,
      "realtimeMaxPerAddress",
      1,
      1_000_000,
    ),
    realtimeHeartbeat: int(v.realtimeHeartbeat, "realtimeHeartbeat", 1, 30),
    realtimeLogBytes: int(v.realtimeLogBytes, "realtimeLogBytes", 1, 2 ** 50),
    realtimeResumeBytes: int(
      v.realtimeResumeBytes,
      "realtimeResumeBytes",
      0,
      2 ** 50,
    ),
    webSocket: v.websocket,
    workers: v.workers === "auto" ? 0 : int(v.workers, "workers", 0, 256),
  };
  const port = int(v.port, "port", 0, 65535) ?? 7070;
  return { command, rest, values: v, config, port, host: v.host ?? "0.0.0.0" };
}

async function admins(
  config: AppConfig,
  values: Record<string, unknown>,
  rest: string[],
): Promise<void> {
  // A command: it neither sweeps files nor prunes logs.
  const core = await createCore({ ...config, quiet: true }, "command");
  try {
    const entity = core.schemas.get("mb_admins")!;
    if (typeof values.add === "string") {
      if (rest.length !== 1) {
        throw new UsageError("admins --add needs <email> <password>");
      }
      const rec = await entity.create({ email: values.add, password: rest[0] });
      console.log(`Created admin ${rec.email} (${rec.id})`);
    } else if (values.ls) {
      const page = await entity.list("limit=500&sort=created");
      for (const a of page.items) {
        console.log(`${a.id}\t${a.email}\t${a.created}`);
      }
      if (!(await hasAdmin(core.storage))) console.log("(no admins)");
    } else if (typeof values.rm === "string") {
      const rec = await entity.queryFromCols(
        values.rm.toLowerCase().includes("@")
          ? values.rm.toLowerCase()
          : values.rm,
        ["id", "email"],
      );
      if (!rec) {
        throw new MoonbaseError(
          "not_found",
          `Cannot remove admin: no admin ${values.rm}`,
        );
      }
      await removeAdmin(entity, String(rec.id));
      console.log(`Removed admin ${rec.email}`);
    } else {
      throw new UsageError(
        "admins needs --add <email> <password>, --ls or --rm <email|id>",
      );
    }
  } finally {
    await core.close();
  }
}

/**
 * `types`: the TypeScript types of every entity the records API serves
 * (lib/openapi/types_ts.ts), to `--out` or standard output.
 */
async function types(
  config: AppConfig,
  values: Record<string, unknown>,
  rest: string[],
): Promise<void> {
  if (rest.length > 0) throw new UsageError("types takes only --out <file>");
  const core = await createCore({ ...config, quiet: true }, "command");
  let text: string;
  try {
    text = typesModule(allEntities(core.records.served()), {
      version: VERSION,
    });
  } finally {
    await core.close();
  }
  if (typeof values.out === "string") {
    try {
      await Deno.writeTextFile(values.out, text);
    } catch (err) {
      throw new MoonbaseError(
        "invalid",
        `Cannot write the types to ${values.out}: ${
          err instanceof Error ? err.message.split("\n")[0] : String(err)
        }; check that its directory exists and is writable`,
      );
    }
    console.error(`Wrote the types to ${values.out}`);
  } else await Deno.stdout.write(new TextEncoder().encode(text));
}

/** Runs the CLI; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  try {
    const cli = parseCli(args);
    if (cli.values.help) {
      console.log(USAGE);
      return 0;
    }
    if (cli.values.version) {
      console.log(VERSION);
      return 0;
    }
    if (cli.command === "serve" && cli.rest.length === 0) {
      await serveCommand(cli.config, cli.port, cli.host);
      return 0;
    }
    if (cli.command === "admins") {
      await admins(cli.config, cli.values, cli.rest);
      return 0;
    }
    if (cli.command === "types") {
      await types(cli.config, cli.values, cli.rest);
      return 0;
    }
    if (cli.command === "backup") {
      await backupCommand(cli.config, cli.rest, cli.values.out as string);
      return 0;
    }
    if (cli.command === "files") {
      await filesCommand(cli.config, cli.values.to, cli.rest);
      return 0;
    }
    if (cli.command === "migrate") {
      await migrateCommand(cli.config, cli.rest);
      return 0;
    }
    if (cli.command === "move-to" && cli.rest.length === 0) {
      await moveToCommand(cli.config);
      return 0;
    }
    throw new UsageError(
      cli.command
        ? `unknown command ${
          JSON.stringify([cli.command, ...cli.rest].join(" "))
        }`
        : "missing command",
    );
  } catch (err) {
    if (err instanceof UsageMistake) {
      console.error(`moonbase: ${err.message}\n\n${USAGE}`);
    } else if (err instanceof MoonbaseError) {
      const fields =
        (err.data as { fields?: Record<string, { message: string }> } | null)
          ?.fields;
      const detail = fields
        ? `: ${
          Object.entries(fields).map(([k, f]) => `${k} ${f.message}`).join(", ")
        }`
        : "";
      console.error(`moonbase: ${err.message}${detail}`);
    } else if (err instanceof StorageUnavailableError || err instanceof Error) {
      console.error(`moonbase: ${err.message.split("\n")[0]}`);
    } else console.error(`moonbase: ${String(err)}`);
    return 2;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
