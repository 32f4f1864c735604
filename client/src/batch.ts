/**
 * Several record writes in one transaction: `mb.batch()`, then
 * `.entity(name).create/update/delete/upsert(…)` for each, then `.send()`
 * (`POST /api/v1/batch`). All are applied, or none. Files (a `Blob` or an
 * array of them as a field's value) go as multipart parts.
 *
 * @module
 */

import { MoonbaseError } from "./errors.ts";
import { blobsOf, fileName, seg, type Transport } from "./transport.ts";

/** One request's answer, in order. */
export interface BatchResult<T = unknown> {
  status: number;
  /** The record (`null` for a delete). */
  data: T;
  error: string;
}

interface BatchRequest {
  method: "POST" | "PATCH" | "DELETE" | "PUT";
  url: string;
  body?: Record<string, unknown>;
}

/** The writes of one entity in a batch. */
export interface BatchEntity<C = Record<string, unknown>, U = C> {
  /** Creates a record. */
  create(data: C): Batch;
  /** Changes a record. */
  update(id: string, data: U): Batch;
  /** Deletes a record. */
  delete(id: string): Batch;
  /** Creates the record with `data.id` (a lowercase UUID), or updates it when it exists. */
  upsert(data: C & { id: string }): Batch;
}

/** A batch being put together; `send()` runs it. */
export class Batch {
  readonly #t: Transport;
  readonly #requests: BatchRequest[] = [];

  /** Made by `Moonbase.batch`. */
  constructor(transport: Transport) {
    this.#t = transport;
  }

  /** The number of requests so far. */
  get size(): number {
    return this.#requests.length;
  }

  /** The writes of one entity. */
  entity<C = Record<string, unknown>, U = C>(name: string): BatchEntity<C, U> {
    const url = `/api/v1/entities/${seg(name)}`;
    const add = (r: BatchRequest): Batch => {
      this.#requests.push(r);
      return this;
    };
    return {
      create: (data) =>
        add({ method: "POST", url, body: data as Record<string, unknown> }),
      update: (id, data) =>
        add({
          method: "PATCH",
          url: `${url}/${seg(id)}`,
          body: data as Record<string, unknown>,
        }),
      delete: (id) => add({ method: "DELETE", url: `${url}/${seg(id)}` }),
      upsert: (data) =>
        add({ method: "PUT", url, body: data as Record<string, unknown> }),
    };
  }

  /**
   * Runs the batch. Resolves to one answer per request, in order; when any
   * request fails nothing is applied and it rejects with that request's
   * status and message (`data: {index, response}`).
   */
  async send(options: { signal?: AbortSignal } = {}): Promise<BatchResult[]> {
    if (this.#requests.length === 0) {
      throw new MoonbaseError(0, "Cannot send batch: it has no requests");
    }
    const files: [string, Blob][] = [];
    const requests = this.#requests.map((r, i) => {
      if (!r.body) return r;
      const body: Record<string, unknown> = {};
      for (const [field, value] of Object.entries(r.body)) {
        const blobs = blobsOf(value);
        if (blobs) {
          for (const b of blobs) files.push([`requests.${i}.${field}`, b]);
        } else body[field] = value;
      }
      return { ...r, body };
    });
    let body: unknown = { requests };
    if (files.length > 0) {
      const form = new FormData();
      // A text part (no file name), first: the server reads it before the files.
      form.append("@json", JSON.stringify({ requests }));
      for (const [name, blob] of files) {
        form.append(name, blob, fileName(blob));
      }
      body = form;
    }
    return await this.#t.send("POST", "/api/v1/batch", {
      body,
      signal: options.signal,
    });
  }
}
