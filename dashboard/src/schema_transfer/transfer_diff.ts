/**
 * What a schema import changes, in words: the answer of `POST
 * /api/v1/schemas/import` (entity by entity, each with its details) turned
 * into lines to show — `key`, and `from → to` for each value that changes
 * (a field's changed options one by one, a rule as who it lets through).
 * Pure: no DOM, unit-tested.
 *
 * @module
 */

/** What happens to an entity, or to one part of it. */
export type Action = "create" | "update" | "delete";

/** One part of an entity that changes (`fields.title`, `rules.list`, …). */
export interface ChangeDetail {
  key: string;
  action: Action;
  from?: unknown;
  to?: unknown;
}

/** One entity the import creates, changes or deletes. */
export interface EntityChange {
  entity: string;
  action: Action;
  details: ChangeDetail[];
}

/** The import's answer. */
export interface ImportAnswer {
  changes: EntityChange[];
  dry_run: boolean;
}

/**
 * One line of a detail: `label` names a part of the value ("" for the
 * whole value); `from`/`to` are shown texts, absent when that side has
 * none (a created or deleted thing).
 */
export interface DiffLine {
  label: string;
  from?: string;
  to?: string;
}

/** A detail ready to show. */
export interface DetailView {
  key: string;
  action: Action;
  lines: DiffLine[];
}

type Raw = Record<string, unknown>;

function isRaw(v: unknown): v is Raw {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** JSON with object keys sorted: equal values, equal text. */
function canonical(v: unknown): string {
  return JSON.stringify(
    v ?? null,
    (_k, val) =>
      isRaw(val)
        ? Object.fromEntries(Object.keys(val).sort().map((k) => [k, val[k]]))
        : val,
  );
}

/**
 * A value as text: strings quoted (so `""` shows), `null`/absent as
 * "none", objects as `key: value` pairs.
 */
export function formatValue(v: unknown): string {
  if (v === undefined || v === null) return "none";
  if (isRaw(v)) {
    const entries = Object.entries(v);
    if (entries.length === 0) return "{}";
    return entries.map(([k, x]) => `${k}: ${JSON.stringify(x)}`).join(", ");
  }
  return JSON.stringify(v);
}

/** A rule (`{mode, expr}`) as who it lets through. */
export function ruleText(v: unknown): string {
  if (!isRaw(v)) return formatValue(v);
  switch (v.mode) {
    case "public":
      return "anyone";
    case "auth":
      return "signed-in users";
    case "custom":
      return `custom: ${String(v.expr ?? "")}`;
    case "":
      return "admins only";
    default:
      return formatValue(v);
  }
}

/** The parts of an object that differ, one line each. */
function partLines(from: Raw, to: Raw): DiffLine[] {
  const keys = [...new Set([...Object.keys(to), ...Object.keys(from)])];
  return keys.filter((k) => canonical(from[k]) !== canonical(to[k])).map((
    k,
  ) => ({ label: k, from: formatValue(from[k]), to: formatValue(to[k]) }));
}

/** A created or deleted field's options, without the name its key holds. */
function created(key: string, v: unknown): unknown {
  if (!isRaw(v) || !key.startsWith("fields.")) return v;
  if (v.name !== key.slice("fields.".length)) return v;
  const { name: _name, ...rest } = v;
  return rest;
}

/** One detail as lines: `from → to` for each part that changes. */
export function detailView(d: ChangeDetail): DetailView {
  const rule = d.key.startsWith("rules.");
  const text = rule ? ruleText : formatValue;
  let lines: DiffLine[];
  if (d.action === "create") {
    lines = [{ label: "", to: text(created(d.key, d.to)) }];
  } else if (d.action === "delete") {
    lines = [{ label: "", from: text(created(d.key, d.from)) }];
  } else if (!rule && isRaw(d.from) && isRaw(d.to)) {
    lines = partLines(d.from, d.to);
    // Equal on every key (the server sends only what differs): say so.
    if (lines.length === 0) {
      lines = [{ label: "", from: text(d.from), to: text(d.to) }];
    }
  } else {
    lines = [{ label: "", from: text(d.from), to: text(d.to) }];
  }
  return { key: d.key, action: d.action, lines };
}

/** How many entities each action touches. */
export function changeCounts(
  changes: readonly EntityChange[],
): Record<Action, number> {
  const n: Record<Action, number> = { create: 0, update: 0, delete: 0 };
  for (const c of changes) n[c.action]++;
  return n;
}

/** "1 entity", "3 entities". */
export function entities(n: number): string {
  return `${n} ${n === 1 ? "entity" : "entities"}`;
}

/** The past participle of an action ("created"). */
export const DONE: Record<Action, string> = {
  create: "created",
  update: "changed",
  delete: "deleted",
};

/**
 * One sentence for the whole import: "3 entities change: 1 created, 1
 * changed, 1 deleted." (`applied`: "3 entities changed: …") or that
 * nothing changes.
 */
export function summaryText(
  changes: readonly EntityChange[],
  applied = false,
): string {
  if (changes.length === 0) {
    return "Nothing to change: this server's schemas already match.";
  }
  const n = changeCounts(changes);
  const parts = (["create", "update", "delete"] as const)
    .filter((a) => n[a] > 0).map((a) => `${n[a]} ${DONE[a]}`);
  const verb = applied
    ? "changed"
    : changes.length === 1
    ? "changes"
    : "change";
  return `${entities(changes.length)} ${verb}: ${parts.join(", ")}.`;
}

/**
 * The question before applying: how many entities change, that it is all
 * or nothing, and which entities are deleted with their records.
 */
export function confirmText(changes: readonly EntityChange[]): string {
  const gone = changes.filter((c) => c.action === "delete").map((c) =>
    c.entity
  );
  const lost = changes.some((c) =>
    c.action === "update" &&
    c.details.some((d) => d.action === "delete" && d.key.startsWith("fields."))
  );
  return [
    `Apply the changes to ${entities(changes.length)}?`,
    "They are applied all or nothing: if the server refuses one, none is applied.",
    gone.length > 0
      ? `Deleted with all their records: ${gone.join(", ")}.`
      : "",
    lost ? "Deleted fields lose their data." : "",
  ].filter(Boolean).join(" ");
}
