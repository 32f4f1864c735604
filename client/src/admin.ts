/**
 * The admin side of the API: `mb.admins` (admin sign-in and accounts),
 * `mb.schemas`, `mb.logs` and `mb.settings`. Every call but the sign-in
 * ones needs an admin's token in the store.
 *
 * @module
 */

import { MoonbaseError } from "./errors.ts";
import { seg, type Transport } from "./transport.ts";
import type {
  AuthResult,
  EntitySchema,
  ListQuery,
  LogEntry,
  LogQuery,
  LogStats,
  Page,
} from "./types.ts";
import { listParams } from "./entity.ts";

/** An admin account. */
export interface AdminRecord {
  id: string;
  email: string;
  created: string;
  updated: string;
  [field: string]: unknown;
}

/** Admin sign-in and the admin accounts (`/api/v1/sys/admins`). */
export class AdminsService {
  readonly #t: Transport;

  /** Made by `Moonbase`. */
  constructor(transport: Transport) {
    this.#t = transport;
  }

  /** Signs in as an admin; the token goes to the store. */
  async login(
    email: string,
    password: string,
  ): Promise<AuthResult<AdminRecord>> {
    return this.#t.signIn(
      await this.#t.send<AuthResult<AdminRecord>>(
        "POST",
        "/api/v1/sys/admins/login",
        { body: { identity: email, password }, auth: "none" },
      ),
    );
  }

  /** A new admin token (the old one is revoked). */
  async refresh(): Promise<AuthResult<AdminRecord>> {
    const token = this.#t.authStore.token;
    try {
      return this.#t.signIn(
        await this.#t.send<AuthResult<AdminRecord>>(
          "POST",
          "/api/v1/sys/admins/refresh",
          { auth: { token } },
        ),
      );
    } catch (err) {
      if (err instanceof MoonbaseError && err.status === 401) {
        await this.#t.refused(token);
      }
      throw err;
    }
  }

  /** Revokes the admin token and clears the store. */
  async logout(): Promise<void> {
    const token = this.#t.authStore.token;
    if (token === "") return this.#t.authStore.clear();
    // Revoked first, then forgotten (see AuthService.logout).
    try {
      await this.#t.send("POST", "/api/v1/sys/admins/logout", {
        auth: { token },
      });
    } catch (err) {
      if (!(err instanceof MoonbaseError) || err.status !== 401) throw err;
    } finally {
      this.#t.authStore.clear();
    }
  }

  /** Whether the server waits for its first admin. */
  async setupRequired(): Promise<boolean> {
    const d = await this.#t.send<{ required: boolean }>(
      "GET",
      "/api/v1/sys/admins/setup",
      { auth: "none" },
    );
    return d.required;
  }

  /** Creates the first admin with the setup token printed at start; signs in. */
  async setup(
    setupToken: string,
    email: string,
    password: string,
  ): Promise<AuthResult<AdminRecord>> {
    return this.#t.signIn(
      await this.#t.send<AuthResult<AdminRecord>>(
        "POST",
        "/api/v1/sys/admins/setup",
        { body: { email, password }, auth: { token: setupToken } },
      ),
    );
  }

  /** A page of admins. */
  list(query: ListQuery = {}): Promise<Page<AdminRecord>> {
    return this.#t.send("GET", "/api/v1/sys/admins", {
      query: listParams(query),
    });
  }

  /** One admin. */
  get(id: string): Promise<AdminRecord> {
    return this.#t.send("GET", `/api/v1/sys/admins/${seg(id)}`);
  }

  /** Creates an admin. */
  create(data: { email: string; password: string }): Promise<AdminRecord> {
    return this.#t.send("POST", "/api/v1/sys/admins", { body: data });
  }

  /** Changes an admin (a new password ends their other sessions). */
  update(
    id: string,
    data: { email?: string; password?: string },
  ): Promise<AdminRecord> {
    return this.#t.send("PATCH", `/api/v1/sys/admins/${seg(id)}`, {
      body: data,
    });
  }

  /** Deletes an admin (never the last one: 409). */
  async delete(id: string): Promise<void> {
    await this.#t.send("DELETE", `/api/v1/sys/admins/${seg(id)}`);
  }
}

/** What `schemas.import` answers. */
export interface SchemaImport {
  changes: {
    entity: string;
    action: "create" | "update" | "delete";
    details: unknown[];
  }[];
  dry_run: boolean;
}

/** Entities' schemas (`/api/v1/schemas`). */
export class SchemasService {
  readonly #t: Transport;

  /** Made by `Moonbase`. */
  constructor(transport: Transport) {
    this.#t = transport;
  }

  /** Every schema, system ones included. */
  list(): Promise<EntitySchema[]> {
    return this.#t.send("GET", "/api/v1/schemas");
  }

  /** One schema, by id or name. */
  get(idOrName: string): Promise<EntitySchema> {
    return this.#t.send("GET", `/api/v1/schemas/${seg(idOrName)}`);
  }

  /** Creates an entity. */
  create(schema: Record<string, unknown>): Promise<EntitySchema> {
    return this.#t.send("POST", "/api/v1/schemas", { body: schema });
  }

  /** Changes an entity (a partial schema). */
  update(
    idOrName: string,
    change: Record<string, unknown>,
  ): Promise<EntitySchema> {
    return this.#t.send("PATCH", `/api/v1/schemas/${seg(idOrName)}`, {
      body: change,
    });
  }

  /** Drops an entity and its records. */
  async delete(idOrName: string): Promise<void> {
    await this.#t.send("DELETE", `/api/v1/schemas/${seg(idOrName)}`);
  }

  /** Every schema, in dependency order, for `import` on another server. */
  async export(): Promise<EntitySchema[]> {
    const out = await this.#t.send<{ schemas: EntitySchema[] }>(
      "GET",
      "/api/v1/schemas/export",
    );
    return out.schemas;
  }

  /**
   * Applies a set of schemas in one transaction, all or nothing (a dry run
   * by default: `{ dryRun: false }` applies). Answers the changes, entity by
   * entity; `deleteMissing` also drops entities the set does not hold.
   */
  import(
    schemas: readonly Record<string, unknown>[],
    options: { dryRun?: boolean; deleteMissing?: boolean } = {},
  ): Promise<SchemaImport> {
    return this.#t.send("POST", "/api/v1/schemas/import", {
      body: {
        schemas,
        dry_run: options.dryRun ?? true,
        delete_missing: options.deleteMissing ?? false,
      },
    });
  }

  /** Record counts per entity (capped at 10 001; `null` where counting failed). */
  counts(): Promise<Record<string, number | null>> {
    return this.#t.send("GET", "/api/v1/sys/counts");
  }
}

/** The server's logs (`/api/v1/sys/logs`). */
export class LogsService {
  readonly #t: Transport;

  /** Made by `Moonbase`. */
  constructor(transport: Transport) {
    this.#t = transport;
  }

  /** A page of entries, newest first. */
  list(query: LogQuery = {}): Promise<Page<LogEntry>> {
    const { limit, ...rest } = query;
    return this.#t.send("GET", "/api/v1/sys/logs", {
      query: {
        ...rest,
        limit: limit === undefined ? undefined : String(limit),
      },
    });
  }

  /** One entry. */
  get(id: string): Promise<LogEntry> {
    return this.#t.send("GET", `/api/v1/sys/logs/${seg(id)}`);
  }

  /** Request counts over time. */
  stats(
    query: { start_date?: string; end_date?: string; buckets?: number } = {},
  ): Promise<LogStats> {
    return this.#t.send("GET", "/api/v1/sys/logs/stats", {
      query: {
        start_date: query.start_date,
        end_date: query.end_date,
        buckets: query.buckets === undefined
          ? undefined
          : String(query.buckets),
      },
    });
  }
}

/** The app's settings (`/api/v1/sys/settings`). */
export class SettingsService {
  readonly #t: Transport;

  /** Made by `Moonbase`. */
  constructor(transport: Transport) {
    this.#t = transport;
  }

  /** The settings (secrets blanked). */
  get(): Promise<Record<string, unknown>> {
    return this.#t.send("GET", "/api/v1/sys/settings");
  }

  /** Changes the given settings. */
  update(change: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.#t.send("PATCH", "/api/v1/sys/settings", { body: change });
  }

  /** Sends a test mail with the current mail settings. */
  async testMail(body: { to: string; [key: string]: unknown }): Promise<void> {
    await this.#t.send("POST", "/api/v1/sys/settings/test-mail", { body });
  }
}
