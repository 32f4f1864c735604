/**
 * What backups need from the rest of the server, as small interfaces: the
 * file store (read a file, write one back under its name, hold removals
 * while a backup reads) and the sealed secrets (TOTP secrets are sealed
 * under a key of the server that wrote them: a backup carries them open
 * and a restore seals them under its own key).
 *
 * @module
 */

/** The file store as backups use it (lib/files/store.ts). */
export interface BackupFiles {
  /** The bytes and size of a stored file, or undefined when it is missing. */
  stream(
    entityId: string,
    name: string,
  ): Promise<{ size: number; body: AsyncIterable<Uint8Array> } | undefined>;
  /** Writes a file under its stored name; false when it was there already. */
  writeNamed(
    entityId: string,
    name: string,
    size: number,
    body: AsyncIterable<Uint8Array>,
  ): Promise<boolean>;
  /**
   * Defers this process's file removals until the returned function is
   * called, so a file of a record in a backup's snapshot is not removed
   * while the backup reads it.
   */
  hold(): () => void;
}

/** Sealing of stored secrets (lib/auth/totp_enrollment.ts). */
export interface BackupSecrets {
  /** The TOTP secret of a row in the open (base64url), or undefined when it does not open here. */
  unsealTotp(
    entityId: string,
    userId: string,
    sealed: string,
  ): string | undefined;
  /** Seals a TOTP secret (base64url) under this server's key. */
  sealTotp(entityId: string, userId: string, plain: string): string;
}
