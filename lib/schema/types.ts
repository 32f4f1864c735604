/**
 * Types of the schema objects: entities, fields and rules (docs/reference/schemas.md,
 * docs/guide/entities.md and docs/guide/rules.md).
 *
 * @module
 */

import type { AuthOptions } from "./auth_types.ts";

/** Field types. */
export type FieldType =
  | "string"
  | "text"
  | "email"
  | "url"
  | "int"
  | "double"
  | "bool"
  | "date"
  | "json"
  | "select"
  | "file"
  | "files"
  | "relation";

/** What happens to referencing records when the referenced one is deleted. */
export type OnDelete = "cascade" | "set null" | "restrict";

/** A field object. */
export interface FieldDef {
  id: string;
  name: string;
  type: FieldType;
  required: boolean;
  unique: boolean;
  /** A plain index (for filters and sorts); relations always have one. */
  index?: boolean;
  /** string and text: part of the entity's full-text search (`?search=`). */
  searchable?: boolean;
  default?: unknown;
  min?: number;
  max?: number;
  pattern?: string;
  values?: string[];
  mime_types?: string[];
  /** File fields: the thumbnail sizes anyone who may read a file may have (`100x100`). */
  thumbs?: string[];
  foreign_key?: { entity: string; on_delete: OnDelete };
  /**
   * Relations only: the field holds a list of record ids (a JSON array,
   * stored like a `json` field) instead of one (docs/reference/schemas.md).
   */
  multiple?: boolean;
  /** Built-in field (id, created, updated, email, password, verified). */
  system?: boolean;
  /**
   * View columns only: the entity field (`entity.field`) the column is a
   * plain copy of; its values are decoded like that field's.
   */
  origin?: string;
}

/**
 * An entity-level index over one or more fields, in order
 * (docs/guide/entities.md, "Indexes"). `id` is assigned by the server and names the index in the
 * database; `fields` are field names (a rename rewrites them).
 */
export interface IndexDef {
  id: string;
  fields: string[];
  unique: boolean;
}

/**
 * The `default` of a relation field to an auth entity that stands for the
 * caller: a record created by a user of that entity without a value gets
 * the user's id, before the add rule runs (docs/guide/entities.md).
 */
export const CALLER_DEFAULT = "@auth";

/** Entity types. */
export type EntityType = "base" | "auth" | "view";

/** Rule modes: "" means admins only. */
export type RuleMode = "public" | "auth" | "" | "custom";

/** One rule. */
export interface Rule {
  mode: RuleMode;
  expr: string;
}

/** Operations that rules govern. */
export type Operation = "list" | "get" | "add" | "update" | "delete";

/** The five rules. */
export type Rules = Record<Operation, Rule>;

/**
 * An auth entity's `auth` object, as stored (lib/schema/auth_options.ts
 * `AuthOptions`; read it through `authOptions(entity)`, which fills the
 * defaults).
 */
export type StoredAuthOptions = AuthOptions;

/** A stored schema (what the schemas API returns). */
export interface EntitySchema {
  id: string;
  name: string;
  type: EntityType;
  fields: FieldDef[];
  /** Composite indexes (base and auth entities; absent on views and older schemas). */
  indexes?: IndexDef[];
  view_query: string;
  rules: Rules;
  /** Auth entities: sign-in methods and mail templates (absent on older schemas). */
  auth?: StoredAuthOptions;
  has_api: boolean;
  is_system: boolean;
  created: string;
  updated: string;
}

/** The list of operations, in spec order. */
export const OPERATIONS: readonly Operation[] = [
  "list",
  "get",
  "add",
  "update",
  "delete",
];

/** Rules that only admins pass. */
export function adminOnlyRules(): Rules {
  return {
    list: { mode: "", expr: "" },
    get: { mode: "", expr: "" },
    add: { mode: "", expr: "" },
    update: { mode: "", expr: "" },
    delete: { mode: "", expr: "" },
  };
}
