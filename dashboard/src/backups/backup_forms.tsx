/// <reference lib="dom" />
/**
 * The forms of the backups page: make a backup now (an optional name), and
 * upload an archive (kept under its file name, or the name given; the
 * server refuses a damaged or foreign archive and keeps nothing).
 *
 * @module
 */

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { mb, MoonbaseError } from "../mb.ts";
import { ErrorBox, Field, Submit } from "../ui/field.tsx";
import { toast } from "../ui/toast.tsx";

const NAME_RULE = "Letters, digits, _, - and . (.tar.gz is added).";

/** "Make a backup now". */
export function BackupCreateForm(props: { onMade: () => void }): JSX.Element {
  const [name, setName] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      const made = await mb.backups.create(name.trim());
      toast(`Backup ${made.name} made`);
      setName("");
      props.onMade();
    } catch (err) {
      if (!(err instanceof MoonbaseError)) throw err;
      setError(err.fields.name?.message ?? err.message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="new-backup-title">
      <h2 id="new-backup-title">Make a backup</h2>
      <p class="muted">
        The server keeps serving while it is made: it holds every write
        acknowledged before it began, none half.
      </p>
      <ErrorBox error={error} />
      <Field
        label="Name (optional)"
        hint={`${NAME_RULE} Empty: named by the time.`}
      >
        <input
          name="backup-name"
          value={name}
          maxLength={120}
          autocomplete="off"
          spellcheck={false}
          onInput={(e) =>
            setName(e.currentTarget.value)}
        />
      </Field>
      <div class="row end">
        <Submit busy={busy}>Make backup</Submit>
      </div>
    </form>
  );
}

/** "Upload a backup". */
export function BackupUploadForm(props: { onMade: () => void }): JSX.Element {
  const [file, setFile] = useState<File | null>(null);
  const [name, setName] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const [fileError, setFileError] = useState("");
  const [key, setKey] = useState(0);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError("");
    setFileError("");
    if (!file) {
      setFileError("Choose an archive (.tar.gz) to upload.");
      return;
    }
    setBusy(true);
    try {
      const made = await mb.backups.upload(file, name.trim());
      toast(`Backup ${made.name} uploaded`);
      setFile(null);
      setName("");
      setKey((k) => k + 1); // a fresh file input
      props.onMade();
    } catch (err) {
      if (!(err instanceof MoonbaseError)) throw err;
      setError(err.message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="card"
      onSubmit={submit}
      aria-labelledby="upload-backup-title"
      noValidate
    >
      <h2 id="upload-backup-title">Upload a backup</h2>
      <p class="muted">
        An archive made by this or another Moonbase server, SQLite or
        PostgreSQL. It is checked whole before it is kept.
      </p>
      <ErrorBox error={error} />
      <Field label="Archive" error={fileError}>
        <input
          key={key}
          name="backup-file"
          type="file"
          accept=".gz,.tar.gz,application/gzip"
          aria-invalid={fileError ? "true" : undefined}
          onChange={(e) => {
            setFile(e.currentTarget.files?.[0] ?? null);
            setError("");
            setFileError("");
          }}
        />
      </Field>
      <Field
        label="Keep as (optional)"
        hint={`${NAME_RULE} Empty: the file's name.`}
      >
        <input
          name="backup-upload-name"
          value={name}
          maxLength={120}
          autocomplete="off"
          spellcheck={false}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </Field>
      <div class="row end">
        <Submit busy={busy}>Upload</Submit>
      </div>
    </form>
  );
}
