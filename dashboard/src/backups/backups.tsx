/// <reference lib="dom" />
/**
 * `/mb/backups`: the server's backups (name, size, created; newest first)
 * with Download (a plain link: an admin file token as `?token=`, renewed
 * while the page is open), Restore (after a confirmation that says what is
 * replaced; then the admin logs in again, as one of the backup's admins)
 * and Delete; forms to make one and to upload one; and the schedule. All
 * through `mb.backups` and `mb.settings` of the client.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { type BackupInfo, mb, MoonbaseError } from "../mb.ts";
import { sizeText } from "../files/file_meta.ts";
import { localTime } from "../logs/log_format.tsx";
import { navigate } from "../router.ts";
import { session } from "../session/session.ts";
import { confirmAction } from "../ui/confirm.tsx";
import { ErrorBox } from "../ui/field.tsx";
import { toast } from "../ui/toast.tsx";
import { BackupCreateForm, BackupUploadForm } from "./backup_forms.tsx";
import { BackupSchedule } from "./backup_schedule.tsx";

/** How often the download links get a new file token (they last 120 s). */
const TOKEN_MS = 60_000;

/** An admin file token for the download links, renewed while mounted. */
function useDownloadToken(): string {
  const [token, setToken] = useState("");
  useEffect(() => {
    let live = true;
    const renew = () =>
      mb.files.token()
        .then((t) => live && setToken(t.token))
        // No token (the session ended, say): the links answer 401.
        .catch(() => live && setToken(""));
    void renew();
    const timer = setInterval(renew, TOKEN_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, []);
  return token;
}

/** The backups page. */
export function BackupsPage(_props: Record<string, never>): JSX.Element {
  const [list, setList] = useState<BackupInfo[] | null>(null);
  const [error, setError] = useState("");
  const [tick, setTick] = useState(0);
  const [restoring, setRestoring] = useState("");
  const token = useDownloadToken();

  useEffect(() => {
    const ac = new AbortController();
    mb.backups.list({ signal: ac.signal })
      .then((l) => {
        setList(l);
        setError("");
      })
      .catch((e) => {
        // Anything else is the abort of a page left meanwhile.
        if (e instanceof MoonbaseError) setError(e.message);
      });
    return () => ac.abort();
  }, [tick]);
  const reload = () => setTick((n) => n + 1);

  const remove = async (b: BackupInfo) => {
    const ok = await confirmAction(
      `Delete the backup "${b.name}"? Its file is removed from the server for good.`,
      "Delete backup",
    );
    if (!ok) return;
    setError("");
    try {
      await mb.backups.delete(b.name);
      toast(`Backup ${b.name} deleted`);
    } catch (e) {
      if (!(e instanceof MoonbaseError)) throw e;
      setError(e.message);
    }
    reload();
  };

  const restore = async (b: BackupInfo) => {
    const ok = await confirmAction(
      `Restore "${b.name}"? All of this server's data (entities, records, files, users, settings, API keys) is replaced by the backup's, made ${
        localTime(b.created)
      }: what changed since is lost. The admins become the backup's: you will log in again, as one of them.`,
      "Restore backup",
    );
    if (!ok) return;
    setError("");
    setRestoring(b.name);
    try {
      await mb.backups.restore(b.name);
    } catch (e) {
      setRestoring("");
      if (!(e instanceof MoonbaseError)) throw e;
      setError(e.message);
      return;
    }
    await session.logout(
      `Restored ${b.name}. Log in as one of the backup's admins.`,
    );
    navigate("/mb/login", true);
  };

  return (
    <section class="backups-page">
      <div class="page-head">
        <h1>Backups</h1>
        <p class="muted">
          A backup is one archive of the whole project: schemas, records, users
          with their passwords, admins, settings, API keys and files. It
          restores into SQLite or PostgreSQL. Backups live in the server's data
          directory, under <code>backups/</code>.
        </p>
      </div>
      <ErrorBox error={error} />
      {restoring && (
        <p class="notice" role="status">
          Restoring {restoring}… the page logs out when it is done.
        </p>
      )}
      {!list && !error && <p class="muted">Loading…</p>}
      {list && list.length === 0 && (
        <p class="muted empty-note">No backups yet.</p>
      )}
      {list && list.length > 0 && (
        <div class="table-wrap backups-table">
          <table class="data">
            <caption class="sr-only">Backups</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col" class="num">Size</th>
                <th scope="col" class="wide-only">Created</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((b) => (
                <tr key={b.name}>
                  <td class="backup-name">
                    {b.name}
                    <small class="narrow-only muted">
                      {localTime(b.created)}
                    </small>
                  </td>
                  <td class="num">{sizeText(b.size)}</td>
                  <td class="wide-only">
                    <time dateTime={b.created}>{localTime(b.created)}</time>
                  </td>
                  <td class="actions">
                    <a
                      class="btn btn-small"
                      href={token
                        ? mb.backups.downloadUrl(b.name, { token })
                        : undefined}
                      aria-disabled={token ? undefined : "true"}
                      aria-label={`Download ${b.name}`}
                      download={b.name}
                    >
                      Download
                    </a>
                    <button
                      type="button"
                      class="btn btn-small"
                      aria-label={`Restore ${b.name}`}
                      disabled={restoring !== ""}
                      onClick={() => restore(b)}
                    >
                      Restore
                    </button>
                    <button
                      type="button"
                      class="btn btn-small btn-danger"
                      aria-label={`Delete ${b.name}`}
                      disabled={restoring !== ""}
                      onClick={() => remove(b)}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="backup-forms">
        <BackupCreateForm onMade={reload} />
        <BackupUploadForm onMade={reload} />
      </div>
      <BackupSchedule />
    </section>
  );
}
