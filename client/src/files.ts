/**
 * File URLs (`/api/files/<entity>/<name>`) and file tokens
 * (`POST /api/v1/files/token`), for `<img src>` and downloads.
 *
 * @module
 */

import { seg, type Transport } from "./transport.ts";

/** Options of a file URL. */
export interface FileUrlOptions {
  /** A thumbnail of an image: `WxH`, with `t`, `b` or `f` after it for top, bottom or fit. */
  thumb?: string;
  /**
   * A file token (`files.token()`), for files whose entity's `get` rule is
   * not public: an `<img>` cannot send the Authorization header.
   */
  token?: string;
}

/** Files of records. */
export class FilesService {
  readonly #t: Transport;

  /** Made by `Moonbase`. */
  constructor(transport: Transport) {
    this.#t = transport;
  }

  /**
   * The URL of the file `name` (a stored name the record's file field
   * holds, e.g. `post.cover`) of `record` in `entity`. `""` when `name` is
   * empty or `record` holds no such file (a field's name given instead of
   * its value, a stale record): a broken link is never made up.
   */
  url(
    entity: string,
    record: { [field: string]: unknown } | null | undefined,
    name: string,
    options: FileUrlOptions = {},
  ): string {
    if (!name) return "";
    if (record && !holds(record, name)) return "";
    return this.#t.url(`/api/files/${seg(entity)}/${seg(name)}`, {
      thumb: options.thumb,
      token: options.token,
    });
  }

  /** A short-lived (120 s) token for file URLs of the signed-in caller. */
  token(): Promise<{ token: string; expires: string }> {
    return this.#t.send("POST", "/api/v1/files/token", {});
  }
}

/** Whether a record's file field holds `name`. */
function holds(record: { [field: string]: unknown }, name: string): boolean {
  return Object.values(record).some((v) =>
    v === name || (Array.isArray(v) && v.includes(name))
  );
}
