/**
 * What entities need from the layers above records, handed in by the app
 * (lib/core.ts) when it builds the registry: the file store, password
 * hashing and session revocation live in lib/files and lib/auth, which
 * import records, so records only names the shape it calls.
 *
 * @module
 */

/** Removes stored files; lib/files/store.ts implements it. */
export interface FileCleaner {
  /** Removes some stored files of an entity. */
  remove(entityId: string, names: string[]): Promise<void>;
  /** Removes every stored file of an entity. */
  removeEntity(entityId: string): Promise<void>;
}

/** The services an entity calls outside the records layer. */
export interface EntityEnv {
  /** Where uploaded files live (none: records have no files to remove). */
  files?: FileCleaner;
  /** Hashes the new password of an auth entity's user before it is stored. */
  hashPassword(plain: string): Promise<string>;
  /**
   * Runs after a write that changed a user's password committed: ends every
   * session of that user except `keep` (a session id, "" for none).
   */
  passwordChanged(entity: string, userId: string, keep: string): Promise<void>;
}
