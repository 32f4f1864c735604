/// <reference lib="dom" />
/**
 * The backup schedule: the settings' `backups: {cron, keep}` (read in UTC;
 * `""` is off), shown in words as it is typed, saved with one
 * `PATCH /api/v1/sys/settings`. Scheduled backups are named `mb_auto_…`;
 * only those beyond `keep` are deleted.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { mb, MoonbaseError } from "../mb.ts";
import { ErrorBox, Field, Submit } from "../ui/field.tsx";
import { toast } from "../ui/toast.tsx";
import { cronWords } from "./cron_words.ts";

/** The schedule part of the settings. */
export interface Schedule {
  cron: string;
  keep: number;
}

/** The schedule in `settings`, or the defaults when it holds none. */
export function scheduleOf(settings: Record<string, unknown>): Schedule {
  const b = settings.backups as Partial<Schedule> | undefined;
  return {
    cron: typeof b?.cron === "string" ? b.cron : "",
    keep: typeof b?.keep === "number" ? b.keep : 7,
  };
}

/** The schedule form. */
export function BackupSchedule(): JSX.Element {
  const [cron, setCron] = useState("");
  const [keep, setKeep] = useState("7");
  const [loaded, setLoaded] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const [fields, setFields] = useState<Record<string, string>>({});

  useEffect(() => {
    const ac = new AbortController();
    mb.settings.get()
      .then((s) => {
        if (ac.signal.aborted) return;
        const got = scheduleOf(s);
        setCron(got.cron);
        setKeep(String(got.keep));
        setLoaded(true);
      })
      .catch((e) => {
        if (!ac.signal.aborted && e instanceof MoonbaseError) {
          setError(e.message);
        }
      });
    return () => ac.abort();
  }, []);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    setFields({});
    try {
      const saved = scheduleOf(
        await mb.settings.update({
          backups: { cron: cron.trim(), keep: Number(keep) },
        }),
      );
      setCron(saved.cron);
      setKeep(String(saved.keep));
      toast("Backup schedule saved");
    } catch (err) {
      if (!(err instanceof MoonbaseError)) throw err;
      const f: Record<string, string> = {};
      for (const [k, v] of Object.entries(err.fields)) {
        f[k.replace(/^backups\./, "")] = v.message;
      }
      setFields(f);
      if (Object.keys(f).length === 0) setError(err.message);
    } finally {
      setBusy(false);
    }
  };

  const words = cronWords(cron);
  return (
    <form
      class="card backup-schedule"
      onSubmit={submit}
      aria-labelledby="backup-schedule-title"
      noValidate
    >
      <h2 id="backup-schedule-title">Schedule</h2>
      <p class="muted">
        Backups made on a schedule are named{" "}
        <code>mb_auto_…</code>; after each one, the oldest of them beyond the
        number kept are deleted (backups made by hand or uploaded never are). A
        failed one is logged and mailed to the admins.
      </p>
      <ErrorBox error={error} />
      <div class="form-grid">
        <Field
          label="When (cron, UTC)"
          error={fields.cron}
          hint={
            <>
              minute hour day month weekday, e.g.{" "}
              <code>0 3 * * *</code>; empty: off.{" "}
              <span class="cron-words" aria-live="polite">
                {words ? `${words}.` : "A schedule of its own."}
              </span>
            </>
          }
        >
          <input
            name="backup-cron"
            value={cron}
            disabled={!loaded}
            autocomplete="off"
            spellcheck={false}
            aria-invalid={fields.cron ? "true" : undefined}
            onInput={(e) => {
              setCron(e.currentTarget.value);
              setFields(({ cron: _, ...rest }) => rest);
            }}
          />
        </Field>
        <Field
          label="Keep"
          error={fields.keep}
          hint="How many scheduled backups to keep (1-1000)."
        >
          <input
            name="backup-keep"
            type="number"
            min={1}
            max={1000}
            value={keep}
            disabled={!loaded}
            aria-invalid={fields.keep ? "true" : undefined}
            onInput={(e) => {
              setKeep(e.currentTarget.value);
              setFields(({ keep: _, ...rest }) => rest);
            }}
          />
        </Field>
      </div>
      <div class="row end">
        <Submit busy={busy}>Save schedule</Submit>
      </div>
    </form>
  );
}
