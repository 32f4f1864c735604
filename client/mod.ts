/**
 * `@moonbase/client`: the typed client of a Moonbase server, for browsers,
 * Deno, Node 20+ and Bun, with no dependencies.
 *
 * ```ts ignore
 * import { Moonbase } from "@moonbase/client";
 * const mb = new Moonbase("http://localhost:7070");
 * await mb.auth("users").login("ada@example.com", "correct-horse");
 * const { items } = await mb.entity("posts").list({ sort: "-created", limit: 20 });
 * const stop = await mb.entity("posts").subscribe("*", (e) => console.log(e.action, e.record));
 * ```
 *
 * @module
 */

export { Moonbase, type MoonbaseOptions } from "./src/client.ts";
export {
  type FieldError,
  MoonbaseError,
  type MoonbaseErrorInit,
} from "./src/errors.ts";
export {
  type AuthChange,
  type AuthRecord,
  type AuthStore,
  LocalAuthStore,
  MemoryAuthStore,
} from "./src/auth_store.ts";
export { type CallOptions, EntityService } from "./src/entity.ts";
export {
  AuthService,
  type OAuth2CodeLogin,
  type OAuth2PopupLogin,
  type SecondFactor,
  type TotpService,
} from "./src/auth.ts";
export {
  type BackupCallOptions,
  type BackupInfo,
  BackupsService,
  type RestoreResult,
} from "./src/backups.ts";
export { Batch, type BatchEntity, type BatchResult } from "./src/batch.ts";
export { FilesService, type FileUrlOptions } from "./src/files.ts";
export {
  type AdminRecord,
  AdminsService,
  LogsService,
  type SchemaImport,
  SchemasService,
  SettingsService,
} from "./src/admin.ts";
export {
  Realtime,
  type RealtimeOptions,
  type SubscribeOptions,
  type Unsubscribe,
} from "./src/realtime.ts";
export { completeOAuth2Redirect, type OAuth2Redirect } from "./src/oauth2.ts";
export type { Query, QueryValue, SendOptions } from "./src/transport.ts";
export { claimsOf, type TokenClaims } from "./src/token.ts";
export type {
  AggregateGroup,
  AggregateQuery,
  AggregateResult,
  AnyEntity,
  AnySchema,
  AuthMethods,
  AuthResult,
  EntitySchema,
  EntityTypes,
  Health,
  ListQuery,
  LogEntry,
  LogQuery,
  LogStats,
  Names,
  OAuth2Result,
  Page,
  ProviderLink,
  RealtimeEvent,
  RecordModel,
  RecordQuery,
  SchemaShape,
} from "./src/types.ts";
