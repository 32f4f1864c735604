/**
 * The settings' shape: what a `PATCH /api/v1/sys/settings` may set, each
 * value's check, and which values are secrets (write-only).
 *
 * @module
 */

import { type FieldErrors, invalidFields } from "../errors.ts";
import {
  type Checked,
  emailOrEmpty,
  hostOrEmpty,
  httpUrl,
  integer,
  line,
  mergeShape,
  oneOf,
  redactShape,
  type Shape,
} from "../schema/shape.ts";
import { scheduleProblem } from "../schedule.ts";
import { type PublicSettings, type Settings, SMTP_SECURITY } from "./types.ts";

/** Every settings key, its check, and the secrets. */
export const SETTINGS_SHAPE: Shape = {
  app: {
    name: { check: line(100, 1) },
    url: { check: httpUrl(false) },
  },
  mail: {
    from: {
      name: { check: line(100) },
      address: { check: emailOrEmpty },
    },
    smtp: {
      host: { check: hostOrEmpty },
      port: { check: integer(1, 65535) },
      security: { check: oneOf(SMTP_SECURITY) },
      username: { check: line(256) },
      password: {
        check: line(1024),
        secret: true,
        // Sent to this server only: a new one needs the password again.
        boundTo: { server: ["host"], also: ["port", "security"] },
      },
    },
  },
  backups: {
    cron: { check: scheduleOrEmpty },
    keep: { check: integer(1, 1000) },
  },
};

/** "" (off) or a cron schedule (lib/schedule.ts). */
function scheduleOrEmpty(v: unknown): Checked {
  if (v === "") return { ok: true, value: "" };
  const text = line(200)(v);
  if (!text.ok) return text;
  const problem = scheduleProblem(String(text.value));
  return problem
    ? {
      ok: false,
      code: "invalid_schedule",
      message: `Not a schedule: ${problem} (e.g. "0 3 * * *", or "" for none)`,
    }
    : text;
}

/**
 * The settings after a partial change, or 400 with `data.fields` naming
 * each wrong key by its path (`mail.smtp.port`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultSettings } from "moonbase/lib/settings/types.ts";
 * import { applySettingsPatch } from "moonbase/lib/settings/validate.ts";
 * const s = applySettingsPatch(defaultSettings(), { mail: { smtp: { port: 2525 } } });
 * assert.equal(s.mail.smtp.port, 2525);
 * assert.throws(() => applySettingsPatch(s, { app: { nmae: "x" } }), /app\.nmae/);
 * ```
 */
export function applySettingsPatch(
  current: Settings,
  input: unknown,
): Settings {
  const errors: FieldErrors = {};
  const next = mergeShape(SETTINGS_SHAPE, current, input, errors);
  if (Object.keys(errors).length > 0) {
    throw invalidFields(errors, "Cannot change settings: invalid values");
  }
  return next;
}

/**
 * What an admin reads: secrets "" with a sibling `<key>_set`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultSettings } from "moonbase/lib/settings/types.ts";
 * import { publicSettings } from "moonbase/lib/settings/validate.ts";
 * const s = defaultSettings();
 * s.mail.smtp.password = "hunter2";
 * const p = publicSettings(s);
 * assert.deepEqual([p.mail.smtp.password, p.mail.smtp.password_set], ["", true]);
 * ```
 */
export function publicSettings(s: Settings): PublicSettings {
  return redactShape(SETTINGS_SHAPE, s) as PublicSettings;
}
