/**
 * What entities need from the layers above records, handed in by the app
 * (lib/core.ts) when it builds the registry: the file store, password
 * hashing and session revocation live in lib/files and lib/auth, which
 * import records, so records only names the shape it calls.
 *
 * @module
 */

import type { AuthValue } from "../caller.ts";
import { MoonbaseError } from "../errors.ts";
import type { RecordData } from "./codec.ts";
import type { HookFailure, RecordHooks } from "./events.ts";
import type { ListResult } from "./list.ts";
import type { ChangeJournal } from "./changes.ts";

/**
 * Removes stored files; lib/files/store.ts implements it, and removes only
 * files the database's ledger records as its own.
 */
export interface FileCleaner {
  /** Removes some stored files of an entity. */
  remove(entityId: string, names: string[]): Promise<unknown>;
  /** Removes every stored file of a dropped entity. */
  removeEntity(entityId: string): Promise<void>;
}

/**
 * Record operations as a caller, by entity name (the record service): what
 * `Entity`'s `{ as }` option runs, so the entity's rules apply.
 */
export interface CallerAccess {
  list(
    name: string,
    query: URLSearchParams,
    as: AuthValue,
  ): Promise<ListResult>;
  /**
   * A record the caller may see; undefined when it may not (or there is
   * none). An entity the API does not serve is an error (404).
   */
  read(
    name: string,
    id: string,
    as: AuthValue,
  ): Promise<RecordData | undefined>;
  create(
    name: string,
    data: Record<string, unknown>,
    as: AuthValue,
  ): Promise<RecordData>;
  update(
    name: string,
    id: string,
    data: Record<string, unknown>,
    as: AuthValue,
  ): Promise<RecordData>;
  remove(name: string, id: string, as: AuthValue): Promise<RecordData>;
}

/**
 * The services an entity calls outside the records layer: fixed when the
 * app builds the registry, the same object for the life of the app (script
 * reloads change the generation `hooks` hands out, never a field here).
 */
export interface EntityEnv {
  /** Where uploaded files live (none: records have no files to remove). */
  readonly files?: FileCleaner;
  /** Hashes the new password of an auth entity's user before it is stored. */
  hashPassword(plain: string): Promise<string>;
  /**
   * Runs after a write that changed a user's password committed: ends every
   * session of that user except `keep` (a session id, "" for none).
   */
  passwordChanged(entity: string, userId: string, keep: string): Promise<void>;
  /**
   * Runs after a delete of a user of the auth entity `entityId` committed
   * (or, with no `userId`, after the entity was dropped): removes the
   * user's sign-in rows (codes, second factors, mailed links).
   */
  usersRemoved?(entityId: string, userId?: string): Promise<void>;
  /** Hooks of extension scripts on record writes. */
  readonly hooks: RecordHooks;
  /** Reports an after-hook that threw (the write stands). */
  readonly hookFailed: HookFailure;
  /** Runs operations as a caller: the record service (`Entity`'s `{ as }`). */
  readonly callers: CallerAccess;
  /** Where record changes go for realtime subscribers (none: not kept). */
  readonly changes?: ChangeJournal;
}

/**
 * `CallerAccess` forwarding to the record service, bound once: the service
 * reads the registry, whose entities hold the env, so the app builds the env
 * with this and binds the service before anything is served (lib/core.ts).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CallerRelay } from "moonbase/lib/records/entity_env.ts";
 * const relay = new CallerRelay();
 * assert.throws(() => relay.read("posts", "1", { type: "guest" } as never));
 * ```
 */
export class CallerRelay implements CallerAccess {
  #to: CallerAccess | undefined;

  /** Binds the record service's operations (once). */
  bind(to: CallerAccess): void {
    if (this.#to) {
      throw new Error("Cannot bind the record service: bound already");
    }
    this.#to = to;
  }

  list(
    name: string,
    query: URLSearchParams,
    as: AuthValue,
  ): Promise<ListResult> {
    return this.#bound().list(name, query, as);
  }
  read(
    name: string,
    id: string,
    as: AuthValue,
  ): Promise<RecordData | undefined> {
    return this.#bound().read(name, id, as);
  }
  create(
    name: string,
    data: Record<string, unknown>,
    as: AuthValue,
  ): Promise<RecordData> {
    return this.#bound().create(name, data, as);
  }
  update(
    name: string,
    id: string,
    data: Record<string, unknown>,
    as: AuthValue,
  ): Promise<RecordData> {
    return this.#bound().update(name, id, data, as);
  }
  remove(name: string, id: string, as: AuthValue): Promise<RecordData> {
    return this.#bound().remove(name, id, as);
  }

  #bound(): CallerAccess {
    if (!this.#to) {
      throw new MoonbaseError(
        "unavailable",
        "Cannot act as a caller: no record service yet",
      );
    }
    return this.#to;
  }
}
