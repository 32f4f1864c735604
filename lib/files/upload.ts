/**
 * Reading a record write sent as `multipart/form-data`: text parts become
 * field values (converted by field type; a `@jsonPayload` part may carry a
 * JSON object of values), file parts are streamed to disk. On any failure
 * the files written so far are deleted.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { parseJson } from "../http/body.ts";
import type { BodyDeadlines } from "../http/deadlines.ts";
import type { Entity } from "../records/entity.ts";
import type { FieldDef } from "../schema/types.ts";
import { boundaryOf, parseMultipart, type Part } from "./multipart.ts";
import type { FileStore, StoredFile, UploadBudget } from "./store.ts";

/** A parsed multipart write. */
export interface MultipartWrite {
  body: Record<string, unknown>;
  uploads: Map<string, string[]>;
  files: StoredFile[];
  /** Deletes the uploaded files (call when the write fails). */
  cleanup(): Promise<void>;
}

const MAX_TEXT = 1024 * 1024;
const OVERHEAD = 64 * 1024;

function fromText(field: FieldDef, text: string): unknown {
  switch (field.type) {
    case "int":
    case "double":
      return text === ""
        ? null
        : /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(text)
        ? Number(text)
        : text;
    case "bool":
      return ["true", "1", "on"].includes(text)
        ? true
        : ["false", "0", "off", ""].includes(text)
        ? false
        : text;
    case "relation":
      if (!field.multiple) return text;
      // A multiple relation's part is a JSON list of ids ("" for none).
      if (text === "") return null;
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    case "json":
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    default:
      return text;
  }
}

/** Reads a text part as UTF-8, at most `max` bytes (413 past it). */
export async function readText(
  part: { body(): AsyncGenerator<Uint8Array> },
  max: number,
): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const c of part.body()) {
    size += c.length;
    if (size > max) {
      throw new MoonbaseError(
        "too_large",
        "Cannot read multipart body: a text part is too large",
      );
    }
    chunks.push(c);
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(
      await new Blob(chunks as BlobPart[]).arrayBuffer(),
    );
  } catch {
    throw new MoonbaseError(
      "invalid",
      "Cannot read multipart body: a text part is not valid UTF-8",
    );
  }
}

/** A file part stored for a field. */
export interface StoredUpload extends StoredFile {
  /** The file field it was sent for. */
  field: string;
}

/**
 * Stores a file part sent for `name`, a file field of `entity` (400
 * otherwise), within `budget` and the field's `mime_types`; an empty file
 * input (no file name) is read and counted, not stored (undefined). The
 * one home of what an uploaded file must pass, for single writes and
 * batches alike.
 */
export async function storeFile(
  part: Part,
  name: string,
  entity: Entity,
  store: FileStore,
  budget: UploadBudget,
): Promise<StoredUpload | undefined> {
  const field = entity.field(name);
  if (!field || (field.type !== "file" && field.type !== "files")) {
    const shown = name.slice(0, 64);
    throw new MoonbaseError(
      "invalid",
      `Cannot accept upload: ${shown} is not a file field`,
      {
        fields: {
          [shown]: { code: "not_a_file_field", message: "Not a file field" },
        },
      },
    );
  }
  if (part.filename === "") {
    // An empty file input: ignored, but its bytes still count against the cap.
    for await (const chunk of part.body()) {
      budget.remaining -= chunk.length;
      if (budget.remaining < 0) {
        throw new MoonbaseError(
          "too_large",
          `Cannot accept upload: larger than ${budget.maxFile} bytes`,
        );
      }
    }
    return undefined;
  }
  const stored = await store.write(entity.id, part, budget, field.mime_types);
  return { ...stored, field: field.name };
}

/**
 * Parses a multipart write for an entity, enforcing `maxUpload` per file and
 * per request (413 before reading when `Content-Length` already exceeds it),
 * and the app's body deadlines (`bodies`).
 */
export async function readMultipartWrite(
  req: Request,
  entity: Entity,
  store: FileStore,
  maxUpload: number,
  bodies?: BodyDeadlines,
): Promise<MultipartWrite> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > maxUpload + OVERHEAD) {
    throw new MoonbaseError(
      "too_large",
      `Cannot accept upload: larger than ${maxUpload} bytes`,
    );
  }
  if (!req.body) {
    throw new MoonbaseError("invalid", "Cannot read multipart body: empty");
  }
  const boundary = boundaryOf(req.headers.get("content-type") ?? "");
  const out: MultipartWrite = {
    body: {},
    uploads: new Map(),
    files: [],
    cleanup: async () => {
      await store.remove(entity.id, out.files.map((f) => f.name));
    },
  };
  const budget = { maxFile: maxUpload, remaining: maxUpload };
  const lists = new Map<string, string[]>();
  let text = 0;
  try {
    for await (
      const part of parseMultipart(req.body, boundary, undefined, bodies)
    ) {
      const field = entity.field(part.name);
      if (part.filename !== undefined) {
        const stored = await storeFile(part, part.name, entity, store, budget);
        if (!stored) continue;
        out.files.push(stored);
        const list = out.uploads.get(stored.field) ?? [];
        list.push(stored.name);
        out.uploads.set(stored.field, list);
        continue;
      }
      const value = await readText(part, MAX_TEXT);
      text += value.length;
      if (text > MAX_TEXT) {
        throw new MoonbaseError(
          "too_large",
          "Cannot read multipart body: text parts too large",
        );
      }
      if (part.name === "@jsonPayload") {
        const obj = parseJson(value);
        if (!obj || typeof obj !== "object" || Array.isArray(obj)) {
          throw new MoonbaseError(
            "invalid",
            "Cannot read multipart body: @jsonPayload must be a JSON object",
          );
        }
        Object.assign(out.body, obj);
      } else if (field?.type === "files") {
        const list = lists.get(field.name) ?? [];
        if (value !== "") list.push(value);
        lists.set(field.name, list);
      } else if (field?.type === "file") {
        out.body[field.name] = value === "" ? null : value;
      } else {
        out.body[part.name] = field ? fromText(field, value) : value;
      }
    }
    for (const [name, list] of lists) out.body[name] = list;
    return out;
  } catch (err) {
    await out.cleanup();
    throw err;
  }
}
