/**
 * Reading a batch sent as `multipart/form-data`: a part `@json` holding the
 * batch's JSON body, first, then file parts named
 * `requests.<index>.<field>`, each checked and stored as the file of a
 * single write to that request's entity would be (`storeFile`). On any
 * failure the files written so far are removed; a batch that fails later
 * removes them with `cleanup`.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { parseJson } from "../http/body.ts";
import type { BodyDeadlines } from "../http/deadlines.ts";
import {
  type BatchCall,
  batchFailure,
  parseBatch,
} from "../records/batch_input.ts";
import type { BatchFiles } from "../records/batch.ts";
import type { Entity } from "../records/entity.ts";
import { boundaryOf, parseMultipart } from "./multipart.ts";
import type { FileStore } from "./store.ts";
import { readText, storeFile } from "./upload.ts";

/** A batch read from a multipart body. */
export interface MultipartBatch {
  calls: BatchCall[];
  /** Files by request index. */
  files: Map<number, BatchFiles>;
  /** Removes every file stored for the batch (call when it fails). */
  cleanup(): Promise<void>;
}

/** What reading a multipart batch needs. */
export interface BatchUploadLimits {
  /** Most requests (`--batchMaxRequests`). */
  maxRequests: number;
  /** Largest upload, per file and in all (`--maxUploadSize`). */
  maxUpload: number;
  /** Largest `@json` part (`--maxBodySize`, as a JSON body). */
  maxJson: number;
}

const FILE_PART = /^requests\.(\d{1,6})\.(.+)$/;
const OVERHEAD = 64 * 1024;

function invalid(message: string): MoonbaseError {
  return new MoonbaseError("invalid", `Cannot read batch: ${message}`);
}

/**
 * Parses a multipart batch: `entityOf` resolves a request's entity (the
 * record service's: 404 for one the API does not serve).
 */
export async function readMultipartBatch(
  req: Request,
  entityOf: (name: string) => Entity,
  store: FileStore,
  limits: BatchUploadLimits,
  bodies?: BodyDeadlines,
): Promise<MultipartBatch> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > limits.maxUpload + limits.maxJson + OVERHEAD) {
    throw new MoonbaseError(
      "too_large",
      `Cannot accept upload: larger than ${limits.maxUpload} bytes`,
    );
  }
  if (!req.body) throw invalid("the body is empty");
  const boundary = boundaryOf(req.headers.get("content-type") ?? "");
  const stored: { entityId: string; name: string }[] = [];
  const out: MultipartBatch = {
    calls: [],
    files: new Map(),
    cleanup: async () => {
      const byEntity = Map.groupBy(stored, (f) => f.entityId);
      for (const [entityId, files] of byEntity) {
        await store.remove(entityId, files.map((f) => f.name));
      }
    },
  };
  const budget = { maxFile: limits.maxUpload, remaining: limits.maxUpload };
  let json = false;
  try {
    for await (
      const part of parseMultipart(req.body, boundary, undefined, bodies)
    ) {
      if (part.name === "@json" && part.filename === undefined) {
        if (json) throw invalid("the @json part is sent twice");
        json = true;
        const value = parseJson(await readText(part, limits.maxJson));
        if (!value || typeof value !== "object" || Array.isArray(value)) {
          throw invalid("the @json part must be a JSON object");
        }
        out.calls = parseBatch(
          value as Record<string, unknown>,
          limits.maxRequests,
        );
        continue;
      }
      const m = FILE_PART.exec(part.name);
      if (!m || part.filename === undefined) {
        throw invalid(
          `unknown part ${
            JSON.stringify(part.name.slice(0, 64))
          }: send the body as @json, files as requests.<index>.<field>`,
        );
      }
      if (!json) throw invalid("the @json part must come before the files");
      const index = Number(m[1]);
      const call = out.calls[index];
      if (!call) {
        throw invalid(
          `file part ${part.name.slice(0, 64)}: no request ${index}`,
        );
      }
      try {
        if (call.method === "DELETE") {
          throw new MoonbaseError(
            "invalid",
            "Cannot accept upload: a DELETE takes no files",
          );
        }
        const entity = entityOf(call.entity);
        const file = await storeFile(part, m[2], entity, store, budget);
        if (!file) continue;
        stored.push({ entityId: entity.id, name: file.name });
        const entry = out.files.get(index) ??
          { entity, uploads: new Map<string, string[]>() };
        const uploads = entry.uploads as Map<string, string[]>;
        uploads.set(file.field, [
          ...(uploads.get(file.field) ?? []),
          file.name,
        ]);
        out.files.set(index, entry);
      } catch (err) {
        throw batchFailure(index, err);
      }
    }
    if (!json) throw invalid("no @json part holding the batch");
    return out;
  } catch (err) {
    await out.cleanup();
    throw err;
  }
}
