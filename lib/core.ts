/**
 * The services of one Moonbase instance: storage, schemas, sessions.
 * Routes are attached on top (see `mod.ts`).
 *
 * Over 350 lines on purpose: `createCore` is the one place the services are
 * built, in order, and closed in reverse; reading it top to bottom is the
 * wiring (lib/core.ts is a layer of its own in _tools/check_cycles.ts).
 *
 * @module
 */

import { Backups } from "./backup/service.ts";
import { openBackupPlace } from "./backup/backups_url.ts";
import { BackupSchedule } from "./backup/schedule.ts";
import { WritePause } from "./http/write_pause.ts";
import { join } from "node:path";
import {
  type AppConfig,
  resolveConfig,
  type ResolvedConfig,
} from "./config.ts";
import type { Storage } from "./db/storage.ts";
import { SqliteStorage } from "./db/sqlite.ts";
import { PostgresStorage } from "./db/postgres.ts";
import {
  databaseHome,
  databaseId,
  ensureSystemTables,
  saveTextVersion,
} from "./schema/system.ts";
import { textVersion } from "./rules/text_fold.ts";
import { Registry } from "./records/registry.ts";
import { TokenSigner } from "./auth/jwt.ts";
import { resolveSecret } from "./auth/secret.ts";
import { Sessions } from "./auth/sessions.ts";
import { ApiKeys } from "./auth/api_keys.ts";
import { OAuth2 } from "./auth/oauth2/service.ts";
import { hashPassword } from "./auth/password.ts";
import { Revocations } from "./auth/revocation.ts";
import { InstanceSync } from "./sync.ts";
import { RepeatedFailure } from "./logs/failure.ts";
import { DbClock } from "./db/db_clock.ts";
import { LoginLimiter } from "./auth/rate_limit.ts";
import { accountChecks } from "./auth/account_checks.ts";
import { randomToken } from "./ids.ts";
import { BodyDeadlines } from "./http/deadlines.ts";
import { SetupGate } from "./auth/setup_gate.ts";
import { type CursorKey, cursorKeyOf } from "./records/list_cursor.ts";
import { FileStore } from "./files/store.ts";
import { openBackend } from "./files/files_url.ts";
import { FileLedger } from "./files/ledger.ts";
import { Thumbnails } from "./files/thumbs.ts";
import {
  bindDataDir,
  checkBeforeOpen,
  databaseRef,
  describeDatabase,
  SQLITE_FILE,
} from "./files/data_dir.ts";
import { Logger } from "./logs/logger.ts";
import { LogStore } from "./logs/store.ts";
import { ruleProblem } from "./rules/check.ts";
import { RecordService } from "./records/service.ts";
import { callerAccess } from "./records/as_caller.ts";
import { RecordBatches } from "./records/batch.ts";
import { ExpressionRules } from "./records/rule_engine.ts";
import { CallerRelay, type EntityEnv } from "./records/entity_env.ts";
import { RecordHooks } from "./records/events.ts";
import { JournalRelay } from "./records/changes.ts";
import type { HttpExtensions } from "./http/middleware.ts";
import type { RuleHelpers } from "./rules/evaluate.ts";
import { EVENTS_CHANNEL, Realtime } from "./realtime/service.ts";
import { announcedJournal, PeerLink } from "./cluster/link.ts";
import { AnnouncedRevocations } from "./cluster/revocations.ts";
import { SharedSetupGate } from "./cluster/setup_gate.ts";
import { SharedStreamCounts } from "./cluster/stream_table.ts";
import { LocalStreamCounts } from "./realtime/stream_counts.ts";
import { connectionCap, streamCap } from "./http/limits.ts";
import { SETTINGS_CHANNEL, SettingsStore } from "./settings/store.ts";
import { mailReady } from "./settings/types.ts";
import { Outbox } from "./mail/outbox.ts";
import { MailSender } from "./mail/sender.ts";
import { SEND_LIMITS, type SendMail, smtpSender } from "./mail/transport.ts";
import { deriveKey } from "./auth/code_hash.ts";
import { OtpCodes } from "./auth/otp.ts";
import { MfaChallenges } from "./auth/mfa.ts";
import { TotpEnrollments } from "./auth/totp_enrollment.ts";
import { ensureSignInTables } from "./auth/sign_in_tables.ts";
import { forgetProofs, forgetUserRows } from "./auth/user_rows.ts";
import { AccountTokens } from "./auth/account_tokens.ts";
import { AccountFlows } from "./auth/account_mail.ts";
import denoJson from "../deno.json" with { type: "json" };

/** Moonbase's version (from deno.json). */
export const VERSION: string = denoJson.version;

/** The services of an instance. */
export interface Core {
  readonly config: ResolvedConfig;
  readonly storage: Storage;
  readonly schemas: Registry;
  readonly sessions: Sessions;
  /** API keys (`mb_api_keys`): made, listed and deleted by admins. */
  readonly apiKeys: ApiKeys;
  /** OAuth2 / OpenID Connect sign-in (provider links for `methods`, `login-oauth2`). */
  readonly oauth2: OAuth2;
  readonly signer: TokenSigner;
  /** Seals list cursors (derived from the JWT secret). */
  readonly cursorKey: CursorKey;
  readonly limiter: LoginLimiter;
  /**
   * Revocations and schema changes from other instances (LISTEN/NOTIFY +
   * polls) and from the other isolates of this process (`sync.fresh()`).
   */
  readonly sync: InstanceSync;
  readonly files: FileStore;
  /** Thumbnails of stored images (`?thumb=`), made on workers. */
  readonly thumbs: Thumbnails;
  readonly log: Logger;
  /**
   * Rule helpers of the extension scripts (one map for the life of the
   * app: a reload replaces its contents).
   */
  readonly helpers: Map<string, (...args: unknown[]) => unknown>;
  /** Rule-checked record operations (the records API, `{ as }` calls). */
  readonly records: RecordService;
  /** Batches of record writes in one transaction (`POST /api/v1/batch`). */
  readonly batches: RecordBatches;
  /** The scripts' record hooks (entities hold it; a reload replaces its generation). */
  readonly hooks: RecordHooks;
  /** Routes and middleware of the extension scripts (replaced on reload). */
  extensions: HttpExtensions<Core> | undefined;
  readonly logs: LogStore;
  /** Realtime subscriptions (undefined with `realtime: false`). */
  readonly realtime: Realtime | undefined;
  readonly startedAt: number;
  /** Milliseconds since the epoch by the database's clock (one time base for every instance). */
  readonly now: () => number;
  /** One-time token for `POST /api/v1/sys/admins/setup`, while no admin exists. */
  setupToken: string | undefined;
  /** Runs this instance's first-admin setups one at a time. */
  readonly setupGate: SetupGate;
  /** This instance's request-body reads and their time limits (from the config). */
  readonly bodies: BodyDeadlines;
  /** Messages for the operator (secret warnings, setup link). */
  readonly notices: string[];
  /** The app's settings, shared by every instance (`mb_settings`). */
  readonly settings: SettingsStore;
  /** Backups in `<dataDir>/backups` or S3 (`--backups`): make, list, restore (lib/backup). */
  readonly backups: Backups;
  /** Write requests answer 503 while this is paused (a restore). */
  readonly writePause: WritePause;
  /** Mail waiting to be sent (`outbox.enqueue`: docs/guide/settings-and-mail.md). */
  readonly outbox: Outbox;
  /** Sends one message now, through the SMTP server of the settings (test mail). */
  readonly sendMail: SendMail;
  /** Mailed sign-in codes (`request-otp`, `login-otp`). */
  readonly otp: OtpCodes;
  /** First logins waiting for a second factor (`mfa_id`). */
  readonly mfa: MfaChallenges;
  /** TOTP enrolments (secrets sealed with a key derived from the JWT secret). */
  readonly totp: TotpEnrollments;
  /** Verification, password reset and email change by mailed links. */
  readonly accounts: AccountFlows;
  close(): Promise<void>;
}

/** Opens the storage the config names. */
export async function openStorage(config: ResolvedConfig): Promise<Storage> {
  if (config.database.toUpperCase() === "PSQL") {
    if (!config.connection) {
      throw new Error(
        "Cannot use --database PSQL: --connection <url> is required",
      );
    }
    const pg = new PostgresStorage(
      config.connection,
      config.poolSize,
      config.statementTimeout * 1000,
    );
    await pg.connect();
    return pg;
  }
  if (config.database.toUpperCase() !== "SQLITE") {
    throw new Error(
      `Cannot use --database ${config.database}: use PSQL, or omit it for SQLite`,
    );
  }
  await Deno.mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  return new SqliteStorage(join(config.dataDir, SQLITE_FILE));
}

async function openLogConnection(config: ResolvedConfig): Promise<Storage> {
  const pg = new PostgresStorage(config.connection!, 1);
  await pg.connect();
  return pg;
}

/** True when at least one admin account exists. */
export async function hasAdmin(storage: Storage): Promise<boolean> {
  return (await storage.query(`SELECT 1 AS one FROM "mb_admins" LIMIT 1`))
    .length > 0;
}

/**
 * Opens storage, creates system tables, loads schemas and the JWT secret.
 *
 * With `peers` (the serve command's isolates), the start-up work and the
 * singletons run in isolate 0 only: system tables, the data directory's
 * binding to the database, the log pruner and the setup token (the others
 * get isolate 0's).
 *
 * It removes no file: a command (`moonbase admins`) runs on a core alone,
 * and only a server (`createApp`) sweeps files at start. A `command` core
 * does not prune logs either (it may not have been given the server's
 * retention options).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createCore } from "moonbase/lib/core.ts";
 * const core = await createCore({ dataDir: await Deno.makeTempDir(), quiet: true });
 * assert.ok(core.schemas.get("mb_admins")?.isSystem === true);
 * await core.close();
 * ```
 */
export async function createCore(
  options: AppConfig = {},
  role: "server" | "command" = "server",
): Promise<Core> {
  const config = resolveConfig(options);
  // Isolate 0 (or the only one) does the start-up work and runs the singletons.
  const first = (config.peers?.index ?? 0) === 0;
  const ref = databaseRef(config.database, config.connection);
  // A --files value that cannot be used fails here, before anything opens.
  let warnFiles: (message: string, data: Record<string, unknown>) => void =
    () => {};
  const backend = openBackend(config.files, config.dataDir, {
    timeoutMs: (config.bodyTimeout || 30) * 1000,
    ...config.filesTuning,
    warn: (message, data) => warnFiles(message, data),
  }, config.filesCredentials);
  const backupPlace = openBackupPlace(
    config.backups,
    config.files,
    config.dataDir,
    {
      timeoutMs: (config.bodyTimeout || 30) * 1000,
      ...config.filesTuning,
      warn: (message, data) => warnFiles(message, data),
    },
    config.filesCredentials,
  );
  // Before SQLite creates its file there: a directory of another database.
  if (first && /^(PSQL|SQLITE)$/i.test(config.database)) {
    await checkBeforeOpen(config.dataDir, ref, config.rebindDataDir);
  }
  const storage = await openStorage(config);
  const peers = (config.peers?.count ?? 1) > 1
    ? new PeerLink(config.peers!)
    : undefined;
  let logStorage: Storage | undefined;
  let sync: InstanceSync | undefined;
  let dbClock: DbClock | undefined;
  let realtime: Realtime | undefined;
  let logs: LogStore | undefined;
  let pruner: ReturnType<typeof setInterval> | undefined;
  let mailer: MailSender | undefined;
  let schedule: BackupSchedule | undefined;
  try {
    const notices: string[] = [];
    let textMoved = false;
    if (first) {
      textMoved = await ensureSystemTables(storage);
      await ensureSignInTables(storage);
      // Nothing is written into the data directory before it is ours.
      const before = await bindDataDir(
        config.dataDir,
        ref,
        await databaseId(storage),
        config.rebindDataDir,
        await databaseHome(storage),
      );
      if (before) {
        notices.push(
          `notice: data dir ${config.dataDir} now belongs to ${
            describeDatabase(config.dataDir, ref)
          }, no longer to ${before} (its files stay on disk, untouched)`,
        );
      }
    }
    // Logs never share the request path's connections: on SQLite a file of
    // their own (written by a worker), on PostgreSQL one connection of their
    // own (a batch insert must not hold one of the pool's few connections).
    logStorage = storage.dialect.name === "sqlite"
      ? new SqliteStorage(join(config.dataDir, "logs.db"))
      : await openLogConnection(config);
    const logStore = logs = new LogStore(
      logStorage,
      logStorage.dialect.name === "sqlite"
        ? join(config.dataDir, "logs.db")
        : undefined,
    );
    await logStore.init();
    const log = new Logger(
      logStore,
      config.logLevel,
      config.quiet ? "off" : config.dev ? "pretty" : "json",
    );
    // A failed prune is retried a minute later; at most one line in ten
    // minutes says so (a broken database must not write one a minute).
    const pruneFailed = new RepeatedFailure(log, "Cannot prune logs");
    const prune = () =>
      logStore.prune(config.logRetentionDays, config.logMaxRows)
        .catch((err) => pruneFailed.report(err));
    const pruning = first && role === "server";
    if (pruning) await prune();
    pruner = pruning ? setInterval(prune, 60_000) : undefined;
    const helpers = new Map<string, (...args: unknown[]) => unknown>();
    // One time base for every instance on the database: its clock.
    const clock = dbClock = new DbClock(storage, config.clock);
    await clock.start();
    warnFiles = (message, data) => log.warn(message, data);
    // One line saying what is wrong (no bucket, a refused key, no answer).
    if (first) await backend.check();
    if (first) await backupPlace.check();
    const files = new FileStore(
      backend,
      new FileLedger(storage, clock.now),
      clock.now,
    );
    const thumbs = new Thumbnails(files, {
      // The process's number, shared among its isolates.
      concurrency: Math.max(
        1,
        Math.floor(config.thumbConcurrency / (config.peers?.count ?? 1)),
      ),
      maxPixels: config.thumbMaxPixels,
      maxSide: 65_535,
      deadlineMs: config.thumbDeadline * 1000,
      // Held in memory while its thumbnail is made (one per worker).
      maxBytes: 128 * 1024 * 1024,
    });
    const revocations = peers
      ? new AnnouncedRevocations(storage, clock.now, peers)
      : new Revocations(storage, clock.now);
    await revocations.start();
    const hooks = new RecordHooks();
    // Realtime reads the registry and the registry's entities write to its
    // journal: the env holds a relay, bound below before anything is served.
    const journal = config.realtime
      ? new JournalRelay(storage.dialect.name === "postgres")
      : undefined;
    // The record service reads the registry whose entities act `{ as }`
    // through it: bound below, once it exists.
    const callers = new CallerRelay();
    const entityEnv: EntityEnv = {
      files,
      hooks,
      changes: journal,
      callers,
      hashPassword,
      passwordChanged: (entity, id, keep) =>
        revocations.revokeUser(entity, id, keep),
      usersRemoved: (entityId, id) => forgetUserRows(storage, entityId, id),
      credentialsChanged: (entityId, id) => forgetProofs(storage, entityId, id),
      hookFailed: (err, where) =>
        log.error(`${where.event} hook failed`, {
          entity: where.entity,
          script: where.source,
          error: err instanceof Error ? err.message : String(err),
        }),
    };
    const schemas = new Registry(
      storage,
      (expr, names) => ruleProblem(expr, new Set(helpers.keys()), names),
      entityEnv,
      (message, data) => log.warn(message, data),
      (message, data) => log.info(message, data),
    );
    await schemas.load();
    if (textMoved) {
      log.warn(
        `the runtime's Unicode version changed (now ${textVersion()}): rebuilding fold(…) and search indexes`,
        {},
      );
      await schemas.refold();
      await saveTextVersion(storage);
    }
    for (const v of schemas.refusedViews()) {
      log.warn(`view ${v.name} is not served: ${v.problem}`, { view: v.name });
    }
    const secret = await resolveSecret(
      config.dataDir,
      config.jwtSecret ?? Deno.env.get("MB_JWT_SECRET"),
    );
    if (secret.source !== "env") {
      notices.push(
        `warning: MB_JWT_SECRET is not set; using the secret in ${
          join(config.dataDir, ".jwt_secret")
        }${
          secret.source === "generated" ? " (newly generated)" : ""
        }. Set MB_JWT_SECRET in production.`,
      );
    }
    const instanceSync = sync = new InstanceSync(
      storage,
      schemas,
      revocations,
      peers,
      log,
    );
    const rules = new ExpressionRules(
      helpers as RuleHelpers,
      (err) =>
        log.warn("rule expression failed", {
          error: err instanceof Error ? err.message : String(err),
        }),
    );
    const cursorKey = cursorKeyOf(secret.value);
    const limiter = new LoginLimiter(storage);
    const records = new RecordService(
      schemas,
      rules,
      cursorKey,
      accountChecks(limiter, log),
    );
    callers.bind(callerAccess(records));
    if (config.realtime) {
      const rt = realtime = new Realtime({
        storage,
        schemas,
        now: clock.now,
        sees: (entity, entityId, op, auth, record, reads) =>
          records.sees(entity, entityId, op, auth, record, reads),
        sharedReads: (gate) => records.sharedReads(gate),
        expand: (entity, entityId, record, plan, auth) =>
          records.expandEvent(entity, entityId, record, plan, auth),
        isRevoked: (claims) => revocations.isRevoked(claims),
        listening: () => instanceSync.listening,
        limits: {
          maxTopics: config.realtimeMaxTopics,
          maxPerToken: config.realtimeMaxConnections,
          maxPerUser: config.realtimeMaxPerUser,
          maxPerAddress: config.realtimeMaxPerAddress,
          // Streams never take the last slots of the connection cap.
          maxStreams: streamCap(
            connectionCap(config.maxConnections, config.webSocket),
          ),
        },
        // A process's workers count streams together.
        counts: config.peers
          ? new SharedStreamCounts(config.peers.streams)
          : new LocalStreamCounts(),
        heartbeatMs: config.realtimeHeartbeat * 1000,
        bufferBytes: config.realtimeBuffer,
        retainBytes: config.realtimeLogBytes,
        resumeBytes: config.realtimeResumeBytes,
        onError: (err) =>
          log.warn("realtime failed", {
            error: err instanceof Error ? err.message : String(err),
          }),
      });
      await rt.start();
      journal?.bind(peers ? announcedJournal(rt.journal, peers) : rt.journal);
      // Another isolate's commit: on SQLite every id up to it is final.
      peers?.onEvents((position) => rt.feed.committed(position));
      instanceSync.on(EVENTS_CHANNEL, () => rt.notified());
    }
    const settings = new SettingsStore(storage);
    instanceSync.on(SETTINGS_CHANNEL, () => settings.invalidate());
    const outbox = new Outbox(storage, settings, clock.now);
    const sendMail = smtpSender({ ...SEND_LIMITS, ...config.mail?.limits });
    // One sender per server process (isolate 0); a claim is a lease, so
    // the senders of several instances deliver each message once.
    if (first && role === "server") {
      mailer = new MailSender(
        outbox,
        settings,
        log,
        sendMail,
        config.mail?.pace,
      );
    }
    const accountTokens = new AccountTokens(storage, clock.now);
    await accountTokens.start();
    const accounts = new AccountFlows({
      storage,
      tokens: accountTokens,
      outbox,
      log,
      now: clock.now,
      endSessions: (entity, id) => revocations.revokeUser(entity, id),
    });
    await instanceSync.start(config.connection);
    mailer?.start();
    const signer = new TokenSigner(secret.value, config.tokenTtl, clock.now);
    const apiKeys = new ApiKeys(storage, schemas, revocations, clock.now);
    await apiKeys.start();
    const sessions = new Sessions(
      signer,
      schemas,
      storage,
      revocations,
      apiKeys,
    );
    const otp = new OtpCodes(
      storage,
      deriveKey(secret.value, "otp"),
      clock.now,
      outbox,
      (err) =>
        log.error("sign-in code not queued", {
          error: err instanceof Error ? err.message : String(err),
        }),
    );
    const mfa = new MfaChallenges(storage, clock.now);
    const totp = new TotpEnrollments(
      storage,
      deriveKey(secret.value, "totp"),
      clock.now,
    );
    const writePause = new WritePause();
    let owner: Promise<string> | undefined;
    const backups = new Backups({
      dataDir: config.dataDir,
      place: backupPlace,
      owner: () =>
        owner ??= databaseId(storage).catch((err) => {
          owner = undefined; // asked again next time
          throw err;
        }),
      storage,
      files,
      secrets: {
        unsealTotp: (e, u, sealed) => totp.openSecret(e, u, sealed),
        sealTotp: (e, u, plain) => totp.sealSecret(e, u, plain),
      },
      version: VERSION,
      now: clock.now,
      pause: writePause,
      restored: async () => {
        await schemas.load();
        schemas.onChange?.();
        settings.invalidate();
      },
    });
    // Scheduled backups: every server looks, one claims each tick.
    if (first && role === "server") {
      schedule = new BackupSchedule({
        storage,
        backups,
        settings: () => settings.current(),
        now: clock.now,
        log,
        alert: async (error) => {
          const current = await settings.current();
          if (!mailReady(current)) return;
          const admins = await storage.query(`SELECT "email" FROM "mb_admins"`);
          for (const a of admins) {
            await outbox.enqueue({
              to: String(a.email),
              purpose: "backup_failed",
              entity: "mb_admins",
              template: {
                subject: "{APP_NAME}: a scheduled backup failed",
                body:
                  `The scheduled backup of {APP_NAME} ({APP_URL}) failed:\n\n${
                    error.replace(/[{}]/g, "")
                  }\n\nSee the logs of the server for details.`,
                action_url: "",
              },
            });
          }
        },
      });
      schedule.start();
    }
    const setupToken = (await hasAdmin(storage))
      ? undefined
      : config.peers?.setupToken ?? randomToken(24);
    return {
      config,
      storage,
      schemas,
      sessions,
      apiKeys,
      oauth2: new OAuth2({
        store: storage,
        secret: secret.value,
        now: clock.now,
        warn: (message, data) => log.warn(message, data),
        ...config.oauth2,
      }),
      signer,
      cursorKey,
      limiter,
      sync: instanceSync,
      files,
      thumbs,
      log,
      logs: logStore,
      realtime,
      helpers,
      records,
      batches: new RecordBatches(records, storage, {
        maxRequests: config.batchMaxRequests,
        timeoutMs: config.statementTimeout * 1000,
      }),
      hooks,
      extensions: undefined,
      startedAt: Date.now(),
      now: clock.now,
      setupToken,
      setupGate: peers ? new SharedSetupGate(peers) : new SetupGate(),
      bodies: new BodyDeadlines({
        idleMs: config.bodyTimeout * 1000,
        totalMs: config.bodyDeadline * 1000,
        minRate: config.bodyMinRate,
      }),
      notices,
      settings,
      outbox,
      sendMail,
      otp,
      mfa,
      totp,
      accounts,
      backups,
      writePause,
      async close() {
        await schedule?.stop();
        thumbs.close();
        await accounts.close();
        await mailer?.close();
        realtime?.close();
        await instanceSync.close();
        peers?.close();
        clock.close();
        clearInterval(pruner);
        await apiKeys.settled();
        log.info("stopped");
        await log.close();
        logStore.close();
        await logStorage?.close();
        await storage.close();
        await backend.close();
        await backupPlace.close();
      },
    };
  } catch (err) {
    await schedule?.stop();
    await mailer?.close();
    realtime?.close();
    await sync?.close();
    peers?.close();
    dbClock?.close();
    // A start that failed leaves nothing running (the process could not exit).
    clearInterval(pruner);
    logs?.close();
    // Start-up failed: `err` is what the caller must see; a failure to
    // close what was opened would only hide it.
    await logStorage?.close().catch(() => {});
    await storage.close().catch(() => {});
    await backend.close();
    await backupPlace.close();
    throw err;
  }
}
