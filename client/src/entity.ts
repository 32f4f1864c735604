/**
 * The records of one entity: `mb.entity("posts")` lists, reads, writes,
 * aggregates and subscribes to them (`/api/v1/entities/<entity>`).
 *
 * @module
 */

import type { Realtime, SubscribeOptions, Unsubscribe } from "./realtime.ts";
import { type Query, seg, type Transport, writeBody } from "./transport.ts";
import type {
  AggregateQuery,
  AggregateResult,
  ListQuery,
  Page,
  RealtimeEvent,
  RecordQuery,
} from "./types.ts";

/** Options of one call. */
export interface CallOptions {
  signal?: AbortSignal;
}

/**
 * The records of one entity. `R` is what a read returns, `C` what a create
 * takes, `U` what an update takes.
 */
export class EntityService<R = unknown, C = unknown, U = unknown> {
  /** The entity's name. */
  readonly name: string;
  readonly #t: Transport;
  readonly #realtime: Realtime;

  /** Made by `Moonbase.entity`. */
  constructor(transport: Transport, realtime: Realtime, name: string) {
    this.#t = transport;
    this.#realtime = realtime;
    this.name = name;
  }

  #path(id?: string): string {
    const base = `/api/v1/entities/${seg(this.name)}`;
    return id === undefined ? base : `${base}/${seg(id)}`;
  }

  /** One page: `{items, cursor, has_more, total?}`. */
  list(query: ListQuery = {}, options: CallOptions = {}): Promise<Page<R>> {
    return this.#t.send("GET", this.#path(), {
      query: listParams(query),
      signal: options.signal,
    });
  }

  /**
   * Every page of a list, one after the other (each asked for when the
   * previous one has been taken):
   * `for await (const page of mb.entity("posts").listAll()) …`.
   */
  async *listAll(
    query: Omit<ListQuery, "after"> = {},
    options: CallOptions = {},
  ): AsyncGenerator<Page<R>, void, undefined> {
    let after: string | undefined;
    do {
      const page = await this.list({ ...query, after }, options);
      yield page;
      after = page.has_more && page.cursor !== null ? page.cursor : undefined;
    } while (after !== undefined);
  }

  /** One record (404 when there is none, or the caller may not see it). */
  get(
    id: string,
    query: RecordQuery = {},
    options: CallOptions = {},
  ): Promise<R> {
    return this.#t.send("GET", this.#path(id), {
      query: shapeParams(query),
      signal: options.signal,
    });
  }

  /**
   * Creates a record. Files go as multipart: give a `FormData`, or `File`s
   * (`Blob`s) as field values.
   */
  create(
    data: C | FormData,
    query: RecordQuery = {},
    options: CallOptions = {},
  ): Promise<R> {
    return this.#t.send("POST", this.#path(), {
      body: writeBody(data),
      query: shapeParams(query),
      signal: options.signal,
    });
  }

  /** Changes the given fields of a record (files as in `create`). */
  update(
    id: string,
    data: U | FormData,
    query: RecordQuery = {},
    options: CallOptions = {},
  ): Promise<R> {
    return this.#t.send("PATCH", this.#path(id), {
      body: writeBody(data),
      query: shapeParams(query),
      signal: options.signal,
    });
  }

  /** Deletes a record. */
  async delete(id: string, options: CallOptions = {}): Promise<void> {
    await this.#t.send("DELETE", this.#path(id), { signal: options.signal });
  }

  /** Counts, sums, averages, minimums and maximums, per group. */
  aggregate(
    query: AggregateQuery = {},
    options: CallOptions = {},
  ): Promise<AggregateResult> {
    const { count, ...rest } = query;
    return this.#t.send("GET", `${this.#path()}/aggregate`, {
      query: { ...rest, count: count ? "true" : undefined },
      signal: options.signal,
    });
  }

  /**
   * Calls `callback` with each change of the entity's records (`topic`
   * `"*"`) or of one record (`topic` its id), as the caller's rules let it
   * see them. Resolves once the server confirmed the subscription, to the
   * function that ends it. All subscriptions of a client share one
   * connection.
   */
  subscribe(
    topic: string,
    callback: (event: RealtimeEvent<R>) => void,
    options: SubscribeOptions = {},
  ): Promise<Unsubscribe> {
    const key = topic === "*" || topic === ""
      ? this.name
      : `${this.name}/${topic}`;
    return this.#realtime.subscribe(
      key,
      callback as (event: RealtimeEvent<unknown>) => void,
      options,
    );
  }
}

/** The query of a list. */
export function listParams(query: ListQuery): Query {
  const { count, limit, ...rest } = query;
  return {
    ...rest,
    limit: limit === undefined ? undefined : String(limit),
    count: count ? "true" : undefined,
  };
}

/** The query of an answer's shape. */
export function shapeParams(query: RecordQuery): Query {
  return { expand: query.expand, fields: query.fields };
}
