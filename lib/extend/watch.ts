/**
 * Watching `--scriptsDir` in `--dev`: a change (a file created, edited,
 * renamed or removed, in the directory or below) calls back once the
 * changes have settled for a moment, so that an editor's burst of writes
 * gives one reload.
 *
 * @module
 */

/** Files whose changes matter: modules and the JSON they may read. */
const WATCHED = /\.(m?[jt]s|c[jt]s|[jt]sx|json)$/i;

/** A running watch; `close()` stops it. */
export interface DirWatch {
  close(): void;
}

/**
 * Calls `onChange` `debounceMs` after the last change under `dir`. Reads
 * (access events) and files that are not modules are ignored; `onError`
 * gets a failure of the watch itself (the directory cannot be watched).
 */
export function watchDir(
  dir: string,
  onChange: () => void,
  onError: (err: unknown) => void,
  debounceMs = 150,
): DirWatch {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  let watcher: Deno.FsWatcher | undefined;
  try {
    watcher = Deno.watchFs(dir, { recursive: true });
  } catch (err) {
    onError(err);
  }
  const fire = () => {
    timer = undefined;
    if (!closed) onChange();
  };
  if (watcher) {
    const w = watcher;
    (async () => {
      for await (const e of w) {
        if (e.kind === "access") continue;
        if (!e.paths.some((p) => WATCHED.test(p))) continue;
        clearTimeout(timer);
        timer = setTimeout(fire, debounceMs);
      }
    })().catch((err) => {
      if (!closed) onError(err);
    });
  }
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      try {
        watcher?.close();
      } catch { /* already closed */ }
    },
  };
}
