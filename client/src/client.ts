/**
 * `Moonbase`: the client of one server. It holds the auth store, the
 * refresher and the realtime connection, and hands out the services.
 *
 * @module
 */

import {
  AdminsService,
  LogsService,
  SchemasService,
  SettingsService,
} from "./admin.ts";
import { AuthService } from "./auth.ts";
import { BackupsService } from "./backups.ts";
import {
  type AuthStore,
  LocalAuthStore,
  MemoryAuthStore,
} from "./auth_store.ts";
import { Batch } from "./batch.ts";
import { EntityService } from "./entity.ts";
import { FilesService } from "./files.ts";
import { Realtime, type RealtimeOptions } from "./realtime.ts";
import { Refresher, SETTLE_MS } from "./session.ts";
import { samePrincipal } from "./token.ts";
import {
  dataOf,
  encodeBody,
  errorOf,
  type Query,
  queryString,
  type SendOptions,
  type Transport,
  unreachable,
} from "./transport.ts";
import type { AnySchema, AuthResult, Health, SchemaShape } from "./types.ts";

/** The refresh routes (of users and of admins). */
const REFRESH_PATH = /^\/api\/v1\/(auth\/[^/]+|sys\/admins)\/refresh$/;

/** Options of a client. */
export interface MoonbaseOptions {
  /**
   * Where the token lives: `"memory"` (default), `"local"` (`localStorage`
   * in a browser, shared by its tabs and kept across reloads), or a store
   * of your own.
   */
  store?: "memory" | "local" | AuthStore;
  /** The `localStorage` key of a `"local"` store (default `moonbase_auth`). */
  storageKey?: string;
  /** Refresh the token before it expires (default true). */
  autoRefresh?: boolean;
  /** The `fetch` to use (default the global one). */
  fetch?: typeof fetch;
  /** The realtime connection's backoff and idle timeout. */
  realtime?: RealtimeOptions;
}

/**
 * The client of one Moonbase server. `S` maps entity names to their
 * types (`moonbase types` writes it); without it every entity is untyped.
 *
 * ```ts ignore
 * const mb = new Moonbase<Schema>("https://api.example.com");
 * await mb.auth("users").login("ada@example.com", "correct-horse");
 * const page = await mb.entity("posts").list({ filter: 'status == "open"' });
 * ```
 */
export class Moonbase<S extends SchemaShape<S> = AnySchema> {
  /** The server's base URL, without a trailing slash. */
  readonly baseUrl: string;
  /** The token and user of this client. */
  readonly authStore: AuthStore;
  /** Files of records: URLs and file tokens. */
  readonly files: FilesService;
  /** Admin sign-in and accounts. */
  readonly admins: AdminsService;
  /** Entities' schemas (admin). */
  readonly schemas: SchemasService;
  /** The server's logs (admin). */
  readonly logs: LogsService;
  /** The app's settings (admin). */
  readonly settings: SettingsService;
  /** Backups of the project: list, create, upload, download, restore (admin). */
  readonly backups: BackupsService;
  /** The one realtime connection of this client. */
  readonly realtime: Realtime;
  readonly #fetch: typeof fetch;
  readonly #refresher: Refresher | undefined;
  readonly #transport: Transport;
  /** This client's refresh calls in flight. */
  readonly #refreshing = new Set<Promise<unknown>>();

  /** A client of the server at `url` (`""` or `"/"`: this page's origin). */
  constructor(url = "", options: MoonbaseOptions = {}) {
    this.baseUrl = url.replace(/\/+$/, "");
    this.authStore = typeof options.store === "object"
      ? options.store
      : options.store === "local"
      ? new LocalAuthStore(options.storageKey)
      : new MemoryAuthStore();
    const f = options.fetch ?? globalThis.fetch;
    // Bound: a browser's fetch refuses to run with another `this`.
    this.#fetch = (input, init) => f.call(globalThis, input, init);
    this.#transport = {
      baseUrl: this.baseUrl,
      authStore: this.authStore,
      send: (method, path, o) => this.send(method, path, o),
      open: (method, path, o) => this.#call(method, path, o),
      url: (path, query) => this.url(path, query),
      freshToken: () => this.#freshToken(),
      refused: (token) => this.#refused(token),
      refreshes: () =>
        this.#refreshing.size === 0
          ? undefined
          : Promise.allSettled([...this.#refreshing]).then(() => {}),
      signIn: (answer) => {
        this.#refresher?.issued(answer.token);
        this.authStore.save(answer.token, answer.user as object | null);
        return answer;
      },
    };
    if (options.autoRefresh !== false) {
      this.#refresher = new Refresher(
        this.authStore,
        (path, token) =>
          this.send<AuthResult>("POST", path, { auth: { token } }),
        `moonbase-refresh ${this.baseUrl || "same-origin"}`,
      );
    }
    this.files = new FilesService(this.#transport);
    this.admins = new AdminsService(this.#transport);
    this.schemas = new SchemasService(this.#transport);
    this.logs = new LogsService(this.#transport);
    this.settings = new SettingsService(this.#transport);
    this.backups = new BackupsService(this.#transport);
    this.realtime = new Realtime(this.#transport, options.realtime);
  }

  /** The records of an entity: `mb.entity("posts").list()`. */
  entity<N extends keyof S & string>(
    name: N,
  ): EntityService<S[N]["record"], S[N]["create"], S[N]["update"]> {
    return new EntityService(this.#transport, this.realtime, name);
  }

  /** Signing in as a user of an auth entity: `mb.auth("users").login(…)`. */
  auth<N extends keyof S & string>(name: N): AuthService<S[N]["record"]> {
    return new AuthService(this.#transport, name);
  }

  /** A batch of record writes, sent in one transaction by `send()`. */
  batch(): Batch {
    return new Batch(this.#transport);
  }

  /** The server's health (`GET /api/v1/health`). */
  health(): Promise<Health> {
    return this.send("GET", "/api/v1/health", { auth: "none" });
  }

  /** The absolute URL of an API path with its query. */
  url(path: string, query?: Query): string {
    return `${this.baseUrl}${path}${queryString(query)}`;
  }

  /**
   * Calls any route of the API (a script's own route, say) with the
   * client's token; resolves to the envelope's `data`. Every service call
   * (records, auth, admin, the refresher's) goes through it, so a subclass
   * may override it to watch or reword every call and failure (the
   * dashboard words its errors for people this way); the realtime stream
   * does not (it is no call with an answer).
   */
  async send<T = unknown>(
    method: string,
    path: string,
    options: SendOptions = {},
  ): Promise<T> {
    const answer = this.#call(method, path, options).then((res) =>
      dataOf<T>(res, `${method} ${path}`)
    );
    if (method === "POST" && REFRESH_PATH.test(path)) {
      this.#refreshing.add(answer);
      const done = () => void this.#refreshing.delete(answer);
      answer.then(done, done);
    }
    return await answer;
  }

  /** Stops the refresher and the realtime connection. */
  close(): void {
    this.#refresher?.stop();
    this.realtime.close();
  }

  async #freshToken(): Promise<string> {
    try {
      await this.#refresher?.ensureFresh();
    } catch {
      // A failed refresh leaves the token as it was: the call will say.
    }
    return this.authStore.token;
  }

  async #refused(token: string): Promise<void> {
    // Another tab may have stored a new token meanwhile (and this tab may
    // see it late): that one stays.
    const store = this.authStore;
    if (store instanceof LocalAuthStore) {
      await store.changedFrom(token, SETTLE_MS);
    }
    if (store.token === token) store.clear();
  }

  /** Sends a call; resolves to a successful response, else rejects with the error. */
  async #call(
    method: string,
    path: string,
    options: SendOptions = {},
    again?: string,
  ): Promise<Response> {
    const auth = options.auth ?? "store";
    // `again`: the token a refused call is sent again with (checked below).
    const token = auth === "none"
      ? ""
      : auth === "store"
      ? again ?? await this.#freshToken()
      : auth.token;
    const headers: Record<string, string> = { ...options.headers };
    if (token !== "") headers.authorization = `Bearer ${token}`;
    const body = encodeBody(options.body, headers);
    const url = this.url(path, options.query);
    let res: Response;
    try {
      res = await this.#fetch(url, {
        method,
        headers,
        body,
        signal: options.signal,
      });
    } catch (err) {
      throw unreachable(err, this.baseUrl || url);
    }
    if (res.ok) return res;
    const err = await errorOf(res, `${method} ${path}`);
    if (err.status === 401 && auth === "store" && token !== "") {
      // Another tab (or call) may have refreshed meanwhile: once more with
      // its token — only one of the same user, else the call would run as
      // whoever signed in since (it is refused as the caller's session).
      const store = this.authStore;
      if (store instanceof LocalAuthStore) {
        await store.changedFrom(token, SETTLE_MS);
      }
      const next = store.token;
      if (again === undefined && next !== token && samePrincipal(token, next)) {
        return await this.#call(method, path, options, next);
      }
      if (next === token) store.clear();
    }
    throw err;
  }
}
