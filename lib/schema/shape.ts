/**
 * Nested option objects checked against a shape: the app's settings
 * (lib/settings) and an auth entity's `auth` object (auth_options.ts). A
 * partial input is merged into the current value; every problem is
 * collected under its dotted path (`mail.smtp.port`) for `data.fields`.
 * Secrets are write-only: `""` or an omitted key keeps the stored one,
 * `null` clears it, and the read-only sibling `<key>_set` is accepted and
 * ignored, so an answer sent back changes nothing. A secret is kept only
 * for the server it was given for: when a sibling it is bound to
 * (`boundTo`: the SMTP host, port and security; a provider's issuer) changes,
 * a stored secret must be given again (or cleared with `null`), else
 * whoever may change the host, but not read the secret, could have it sent
 * to a server of theirs.
 *
 * @module
 */

import type { FieldErrors } from "../errors.ts";
import { type Checked, checkValue } from "./field_types.ts";

export type { Checked };

/** One value's check: the normalized value, or why it is wrong. */
export type Check = (value: unknown) => Checked;

/** A leaf of a shape. */
export interface Leaf {
  check: Check;
  /** Write-only: read as "" with `<key>_set`. */
  secret?: boolean;
  /**
   * For a secret: where it is sent. `server`: the sibling keys naming the
   * server (the secret is bound once one of them is set); `also`: keys of
   * how it gets there (port, security). A change of any of them does not
   * keep a bound secret: it must be given again.
   */
  boundTo?: { server: readonly string[]; also?: readonly string[] };
}

/** An object's keys: leaves and nested shapes. */
export interface Shape {
  readonly [key: string]: Leaf | Shape;
}

function isLeaf(x: Leaf | Shape): x is Leaf {
  return typeof (x as Leaf).check === "function";
}

const ok = (value: unknown): Checked => ({ ok: true, value });
const bad = (code: string, message: string): Checked => ({
  ok: false,
  code,
  message,
});

/** A plain object (not an array, not null). */
export function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

/** A string of at most `max` characters without control characters (header-safe). */
export function line(max: number, min = 0): Check {
  return (v) => {
    if (typeof v !== "string") return bad("invalid_type", "Must be a string");
    // deno-lint-ignore no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(v)) {
      return bad("invalid_string", "Must not contain control characters");
    }
    if (v.length > max) {
      return bad("too_large", `Must be at most ${max} characters`);
    }
    if (v.length < min) return bad("required", "Must not be empty");
    return ok(v);
  };
}

/** A string of at most `max` characters (line breaks allowed, no NUL). */
export function text(max: number): Check {
  return (v) => {
    if (typeof v !== "string") return bad("invalid_type", "Must be a string");
    if (v.includes("\0") || !v.isWellFormed()) {
      return bad("invalid_string", "Must not contain NUL characters");
    }
    if (v.length > max) {
      return bad("too_large", `Must be at most ${max} characters`);
    }
    return ok(v);
  };
}

/** An integer in `[min, max]`. */
export function integer(min: number, max: number): Check {
  return (v) =>
    typeof v === "number" && Number.isInteger(v) && v >= min && v <= max
      ? ok(v)
      : bad("invalid_number", `Must be an integer from ${min} to ${max}`);
}

/** A boolean. */
export function boolean(v: unknown): Checked {
  return typeof v === "boolean"
    ? ok(v)
    : bad("invalid_type", "Must be true or false");
}

/** One of `values`. */
export function oneOf(values: readonly string[]): Check {
  return (v) =>
    typeof v === "string" && values.includes(v)
      ? ok(v)
      : bad("invalid_value", `Must be one of: ${values.join(", ")}`);
}

const EMAIL_FIELD = {
  id: "",
  name: "",
  type: "email" as const,
  required: false,
  unique: false,
};

/** An email address, or "" (not set). */
export function emailOrEmpty(v: unknown): Checked {
  return v === "" ? ok("") : checkValue(EMAIL_FIELD, v);
}

/** An absolute http(s) URL (without a trailing slash), or "" when `empty`. */
export function httpUrl(empty: boolean): Check {
  return (v) => {
    if (empty && v === "") return ok("");
    const l = line(2000)(v);
    if (!l.ok) return l;
    let u: URL;
    try {
      u = new URL(v as string);
    } catch {
      return bad("invalid_url", "Must be an absolute http(s) URL");
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      return bad("invalid_url", "Must be an absolute http(s) URL");
    }
    return ok((v as string).replace(/\/+$/, ""));
  };
}

/** A host name or IP address, or "". */
export function hostOrEmpty(v: unknown): Checked {
  if (v === "") return ok("");
  if (typeof v !== "string" || !/^[A-Za-z0-9.:_\-\[\]]{1,253}$/.test(v)) {
    return bad("invalid_host", "Must be a host name or IP address");
  }
  return ok(v);
}

/**
 * Merges a partial `input` into `current` (which it does not change) along
 * `shape`; problems go into `errors` under `prefix` + the key's path.
 * `previous` is what a kept secret was stored with (default `current`): a
 * secret kept while a key of its `boundTo` changed from `previous` is an
 * error (`required`) on the secret.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { integer, line, mergeShape } from "moonbase/lib/schema/shape.ts";
 * const shape = { smtp: { host: { check: line(10) }, port: { check: integer(1, 9) },
 *   password: { check: line(10), secret: true } } };
 * const current = { smtp: { host: "a", port: 1, password: "pw" } };
 * const errors = {};
 * const merged = mergeShape(shape, current, { smtp: { port: 2, password: "", password_set: true } }, errors);
 * assert.deepEqual(merged, { smtp: { host: "a", port: 2, password: "pw" } });
 * mergeShape(shape, current, { smtp: { port: 10, nope: 1 } }, errors);
 * assert.deepEqual(Object.keys(errors), ["smtp.port", "smtp.nope"]);
 * const bound = { smtp: { ...shape.smtp, password: { ...shape.smtp.password, boundTo: { server: ["host"] } } } };
 * const moved = {};
 * mergeShape(bound, current, { smtp: { host: "b" } }, moved);
 * assert.deepEqual(Object.keys(moved), ["smtp.password"]);
 * ```
 */
export function mergeShape<T>(
  shape: Shape,
  current: T,
  input: unknown,
  errors: FieldErrors,
  prefix = "",
  previous: unknown = current,
): T {
  const base = current as Record<string, unknown>;
  const path = (key: string) => prefix + key.slice(0, 64);
  if (!isObject(input)) {
    errors[prefix.slice(0, -1) || "body"] = {
      code: "invalid_type",
      message: "Must be an object",
    };
    return current;
  }
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(input)) {
    const spec = Object.hasOwn(shape, key) ? shape[key] : undefined;
    if (spec === undefined) {
      const owner = key.endsWith("_set") ? shape[key.slice(0, -4)] : undefined;
      if (owner && isLeaf(owner) && owner.secret) continue; // read-only sibling
      errors[path(key)] = { code: "unknown_key", message: "Unknown key" };
      continue;
    }
    if (!isLeaf(spec)) {
      out[key] = mergeShape(
        spec,
        base[key],
        value,
        errors,
        `${path(key)}.`,
        isObject(previous) ? previous[key] : undefined,
      );
      continue;
    }
    if (spec.secret && (value === "" || value === undefined)) continue;
    if (spec.secret && value === null) {
      out[key] = "";
      continue;
    }
    const checked = spec.check(value);
    if (checked.ok) out[key] = checked.value;
    else {
      errors[path(key)] = { code: checked.code, message: checked.message };
    }
  }
  movedSecrets(shape, previous, input, out, errors, path);
  return out as T;
}

/**
 * Flags each stored secret that `out` keeps (not given anew in `input`)
 * while a key of its `boundTo` differs from `previous`.
 */
function movedSecrets(
  shape: Shape,
  previous: unknown,
  input: Record<string, unknown>,
  out: Record<string, unknown>,
  errors: FieldErrors,
  path: (key: string) => string,
): void {
  if (!isObject(previous)) return;
  for (const [key, spec] of Object.entries(shape)) {
    if (!isLeaf(spec) || !spec.secret || !spec.boundTo) continue;
    const stored = previous[key];
    if (typeof stored !== "string" || stored === "" || out[key] !== stored) {
      continue;
    }
    const given = input[key];
    if (typeof given === "string" && given !== "") continue; // given anew
    const { server, also = [] } = spec.boundTo;
    // Stored before any server was named: not bound to one yet.
    if (!server.some((k) => previous[k] !== "" && previous[k] !== undefined)) {
      continue;
    }
    const changed = [...server, ...also].filter((k) => out[k] !== previous[k]);
    if (changed.length === 0 || errors[path(key)]) continue;
    errors[path(key)] = {
      code: "required",
      message: `Must be given again, or null to clear it: ${
        changed.map(path).join(", ")
      } changed, and a stored secret is sent only to the server it was given for`,
    };
  }
}

/**
 * A copy of `value` with every secret of `shape` blanked and a sibling
 * `<key>_set` telling whether it is set.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { line, redactShape } from "moonbase/lib/schema/shape.ts";
 * const shape = { smtp: { password: { check: line(10), secret: true } } };
 * assert.deepEqual(redactShape(shape, { smtp: { password: "pw" } }), {
 *   smtp: { password: "", password_set: true },
 * });
 * ```
 */
export function redactShape<T>(shape: Shape, value: T): T {
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = { ...value };
  for (const [key, spec] of Object.entries(shape)) {
    if (!Object.hasOwn(value, key)) continue;
    if (!isLeaf(spec)) out[key] = redactShape(spec, value[key]);
    else if (spec.secret) {
      out[key] = "";
      out[`${key}_set`] = typeof value[key] === "string" && value[key] !== "";
    }
  }
  return out as T;
}
