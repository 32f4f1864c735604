/**
 * The shapes the API answers with, and the `Schema` type parameter that
 * makes `mb.entity("posts")` typed by name.
 *
 * @module
 */

/** A stored record: its id and times, and its fields. */
export interface RecordModel {
  id: string;
  created: string;
  updated: string;
  [field: string]: unknown;
}

/** The three types of one entity: what a read returns, what a create and an update take. */
export interface EntityTypes {
  record: object;
  create: object;
  update: object;
}

/**
 * The type parameter of `Moonbase<S>`: one `EntityTypes` per entity name,
 * as `moonbase types` generates it:
 *
 * ```ts ignore
 * type Schema = {
 *   posts: { record: PostsRecord; create: PostsCreate; update: PostsUpdate };
 * };
 * const mb = new Moonbase<Schema>(url);
 * ```
 */
export type SchemaShape<S> = { [K in keyof S]: EntityTypes };

/** Any entity: records are `RecordModel`, writes any object. */
export interface AnyEntity {
  record: RecordModel;
  create: Record<string, unknown>;
  update: Record<string, unknown>;
}

/** The schema of a client made without a type parameter: every name, any fields. */
export type AnySchema = Record<string, AnyEntity>;

/** A page of a list. */
export interface Page<R> {
  items: R[];
  items_count: number;
  limit: number;
  has_more: boolean;
  /** Pass as `after` for the next page; `null` on the last. */
  cursor: string | null;
  /** With `count: true`. */
  total?: number;
}

/** A comma list, or its items. */
export type Names = string | readonly string[];

/** The parameters of a list (`GET /api/v1/entities/<entity>`). */
export interface ListQuery {
  /** An expression of the rule language, e.g. `status == "open" && views > 10`. */
  filter?: string;
  /** `-created,title`, or `["-created", "title"]`. */
  sort?: Names;
  /** Related records to include: `author,comments_via_post`. */
  expand?: Names;
  /** Fields to return: `id,title,expand.author.name`. */
  fields?: Names;
  /** 1-500, default 50. */
  limit?: number;
  /** The `cursor` of the previous page. */
  after?: string;
  /** Adds `total`. */
  count?: boolean;
  /** Full-text search over the entity's searchable fields. */
  search?: string;
}

/** The answer shape of a read or a write (`expand`, `fields`). */
export interface RecordQuery {
  expand?: Names;
  fields?: Names;
}

/** The parameters of an aggregate (`GET /api/v1/entities/<entity>/aggregate`). */
export interface AggregateQuery {
  /** Fields to group by; dates as `created:day|week|month|year`. */
  group?: Names;
  /** Count the records of each group. */
  count?: boolean;
  sum?: Names;
  avg?: Names;
  min?: Names;
  max?: Names;
  filter?: string;
  search?: string;
}

/** One group of an aggregate. */
export interface AggregateGroup {
  key: Record<string, unknown>;
  count?: number;
  sum?: Record<string, number | null>;
  avg?: Record<string, number | null>;
  min?: Record<string, unknown>;
  max?: Record<string, unknown>;
}

/** The answer of an aggregate. */
export interface AggregateResult {
  groups: AggregateGroup[];
}

/** The answer of a login: the token and the signed-in user. */
export interface AuthResult<U = RecordModel> {
  token: string;
  user: U;
}

/** The answer of `login-oauth2`. */
export interface OAuth2Result<U = RecordModel> extends AuthResult<U> {
  meta: { is_new: boolean };
}

/** One OAuth2 provider of `methods`, with fresh state and PKCE values. */
export interface ProviderLink {
  name: string;
  display_name: string;
  auth_url: string;
  state: string;
  code_verifier: string;
  code_challenge: string;
  code_challenge_method: string;
}

/** The sign-in methods an auth entity offers. */
export interface AuthMethods {
  password: { enabled: boolean };
  otp: { enabled: boolean };
  mfa: { enabled: boolean };
  totp: { enabled: boolean };
  oauth2: { enabled: boolean; providers: ProviderLink[] };
}

/** A realtime change. */
export interface RealtimeEvent<R = RecordModel> {
  action: "create" | "update" | "delete";
  entity: string;
  id: string;
  /** The record as a read by this caller returns it; for a delete, as it was. */
  record: R;
  /** When the change was written (ISO 8601). */
  timestamp: string;
  /** Set when the topic's expansions could not be given. */
  expand_error?: string;
}

/** The answer of `GET /api/v1/health`. */
export interface Health {
  status: string;
  uptime: number;
  version: string;
  database: string;
}

/** A log entry (`/api/v1/sys/logs`). */
export interface LogEntry {
  id: string;
  time: string;
  level: string;
  type: string;
  message: string;
  method?: string | null;
  path?: string | null;
  status?: number | null;
  duration_ms?: number | null;
  ip?: string | null;
  auth_id?: string | null;
  auth_entity?: string | null;
  request_id?: string | null;
  data?: unknown;
}

/** The parameters of `/api/v1/sys/logs`. */
export interface LogQuery {
  limit?: number;
  after?: string;
  level?: string;
  min_level?: string;
  type?: "request" | "app";
  search?: string;
  start_date?: string;
  end_date?: string;
}

/** Request counts over time (`/api/v1/sys/logs/stats`). */
export interface LogStats {
  from: string;
  to: string;
  bucket_seconds: number;
  buckets: {
    time: string;
    requests: number;
    warnings: number;
    errors: number;
  }[];
}

/** An entity's schema as the schemas API shows it. */
export interface EntitySchema {
  id: string;
  name: string;
  type: "base" | "auth" | "view";
  fields: Record<string, unknown>[];
  indexes?: Record<string, unknown>[];
  view_query?: string;
  rules: Record<string, { mode: string; expr: string }>;
  has_api: boolean;
  is_system: boolean;
  created?: string;
  updated?: string;
  [key: string]: unknown;
}
