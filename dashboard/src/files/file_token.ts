/// <reference lib="dom" />
/**
 * File URLs for `<img src>` and links. Files of an entity whose `get` rule
 * is not public need `?token=` with a short-lived file token
 * (`POST /api/v1/files/token`, 2 minutes): pages fetch one per render of a
 * page of records with `useFileToken()` and build every URL with
 * `fileUrl()`.
 *
 * @module
 */

import { useEffect, useState } from "preact/hooks";
import { mb, seg } from "../mb.ts";
import type { EntitySchema } from "../schemas.ts";

/** Whether the entity's files need a token. */
export function needsToken(schema: EntitySchema | undefined): boolean {
  return !!schema && schema.rules.get.mode !== "public";
}

/**
 * A file token for the entity's files when they need one: "" while it is
 * loading or when none is needed (check `ready` before rendering URLs of
 * protected files). `key` changes (e.g. the page's cursor) fetch a new one.
 */
export function useFileToken(
  schema: EntitySchema | undefined,
  key: unknown,
): { token: string; ready: boolean } {
  const need = needsToken(schema);
  // The token belongs to one (entity, key): until the one for the current
  // pair arrives, nothing is ready (no URL without its token is rendered).
  const want = need ? `${schema?.name}\u0000${String(key)}` : "";
  const [state, setState] = useState({ token: "", for: "" });
  useEffect(() => {
    if (!need) return;
    let live = true;
    mb.files.token()
      .then((d) => live && setState({ token: d.token, for: want }))
      // No token (the session ended, say): URLs go without one and the
      // protected files answer 401 in place of an image, nothing worse.
      .catch(() => live && setState({ token: "", for: want }));
    return () => {
      live = false;
    };
  }, [want]);
  if (!need) return { token: "", ready: true };
  return state.for === want
    ? { token: state.token, ready: true }
    : { token: "", ready: false };
}

/** The URL of a stored file, with `?token=` when one is given. */
export function fileUrl(entity: string, name: string, token = ""): string {
  const base = `/api/v1/files/${seg(entity)}/${seg(name)}`;
  return token ? `${base}?token=${encodeURIComponent(token)}` : base;
}

const IMAGE = /\.(png|jpe?g|gif|webp|avif|bmp|ico)$/i;

/** Whether a stored name looks like an image (for thumbnails). */
export function isImageName(name: string): boolean {
  return IMAGE.test(name);
}

/** The original name of a stored file (`photo_Ab3dE5fGh1.png` → `photo.png`). */
export function originalName(stored: string): string {
  return stored.replace(/_[A-Za-z0-9]{10}(\.[^.]*)?$/, "$1");
}

/** A short type label from a file name's extension (`PDF`, or `file`). */
export function extOf(name: string): string {
  const m = /\.([A-Za-z0-9]{1,5})$/.exec(name);
  return m ? m[1] : "file";
}
