/// <reference lib="dom" />
/**
 * `file` and `files` fields: the stored files (thumbnail or link, remove,
 * move up/down for lists) and new uploads with previews of images
 * (`URL.createObjectURL`). New uploads go after the kept files, as the API
 * stores them.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useRef } from "preact/hooks";
import {
  extOf,
  fileUrl,
  isImageName,
  originalName,
} from "../../files/file_token.ts";
import { sizeText } from "../../files/file_meta.ts";
import type { FieldDef } from "../../schemas.ts";
import { describedBy, FieldBox } from "./field_box.tsx";

/** A new upload and its preview URL ("" when not an image). */
export interface Upload {
  file: File;
  url: string;
}

/** A file field's value in the form. */
export interface FileState {
  /** Stored names kept, in order. */
  kept: string[];
  /** New uploads, in order. */
  added: Upload[];
}

/** The uploader of one file field. */
export function FileInput(props: {
  id: string;
  label: string;
  field: FieldDef;
  entity: string;
  token: string;
  value: FileState;
  onChange: (v: FileState) => void;
  required?: boolean;
  disabled?: boolean;
  error?: string;
}): JSX.Element {
  const v = props.value;
  const multi = props.field.type === "files";
  const latest = useRef(v);
  latest.current = v;
  // Previews die with the form.
  useEffect(() => () => {
    for (const a of latest.current.added) if (a.url) URL.revokeObjectURL(a.url);
  }, []);
  const add = (list: FileList | null) => {
    if (!list || list.length === 0) return;
    const added = [...list].map((file) => ({
      file,
      url: file.type.startsWith("image/") ? URL.createObjectURL(file) : "",
    }));
    if (!multi) {
      for (const a of v.added) if (a.url) URL.revokeObjectURL(a.url);
      props.onChange({ ...v, added: added.slice(0, 1) });
    } else props.onChange({ ...v, added: [...v.added, ...added] });
  };
  const move = (i: number, by: number) => {
    const kept = [...v.kept];
    const j = i + by;
    if (j < 0 || j >= kept.length) return;
    [kept[i], kept[j]] = [kept[j], kept[i]];
    props.onChange({ ...v, kept });
  };
  const replaced = !multi && v.added.length > 0;
  const mimes = props.field.mime_types ?? [];
  const hint = [
    mimes.length ? `Types: ${mimes.join(", ")}` : "",
    multi && props.field.max !== undefined ? `at most ${props.field.max}` : "",
    multi ? "new files are added after the kept ones" : "",
  ].filter(Boolean).join(" · ");
  return (
    <FieldBox
      id={props.id}
      label={props.label}
      required={props.required}
      error={props.error}
      hint={hint}
      class="wide file-field"
    >
      <ol class="file-list" aria-label={`Files of ${props.label}`}>
        {v.kept.map((name, i) => (
          <li key={name} class={replaced ? "replaced" : ""}>
            {isImageName(name)
              ? (
                <img
                  class="thumb"
                  src={fileUrl(props.entity, name, props.token)}
                  alt=""
                />
              )
              : <span class="file-icon" aria-hidden="true">{extOf(name)}</span>}
            <a
              href={fileUrl(props.entity, name, props.token)}
              target="_blank"
              rel="noopener"
              title={name}
              class="file-name"
            >
              {originalName(name)}
            </a>
            {replaced && <span class="muted">(replaced on save)</span>}
            {!props.disabled && (
              <span class="row file-actions">
                {multi && (
                  <>
                    <button
                      type="button"
                      class="btn btn-small btn-ghost"
                      aria-label={`Move ${originalName(name)} up`}
                      disabled={i === 0}
                      onClick={() => move(i, -1)}
                    >
                      ↑
                    </button>
                    <button
                      type="button"
                      class="btn btn-small btn-ghost"
                      aria-label={`Move ${originalName(name)} down`}
                      disabled={i === v.kept.length - 1}
                      onClick={() =>
                        move(i, 1)}
                    >
                      ↓
                    </button>
                  </>
                )}
                <button
                  type="button"
                  class="btn btn-small btn-ghost"
                  aria-label={`Remove ${originalName(name)}`}
                  onClick={() =>
                    props.onChange({
                      ...v,
                      kept: v.kept.filter((n) =>
                        n !== name
                      ),
                    })}
                >
                  Remove
                </button>
              </span>
            )}
          </li>
        ))}
        {v.added.map((a, i) => (
          <li key={`new-${i}-${a.file.name}`} class="new-file">
            {a.url
              ? <img class="thumb" src={a.url} alt="" />
              : (
                <span class="file-icon" aria-hidden="true">
                  {extOf(a.file.name)}
                </span>
              )}
            <span class="file-name">{a.file.name}</span>
            <span class="badge badge-ok">new</span>
            <span class="muted">{sizeText(a.file.size)}</span>
            <button
              type="button"
              class="btn btn-small btn-ghost"
              aria-label={`Remove new ${a.file.name}`}
              onClick={() => {
                if (a.url) {
                  URL.revokeObjectURL(a.url);
                }
                props.onChange({
                  ...v,
                  added: v.added.filter((x) =>
                    x !== a
                  ),
                });
              }}
            >
              Remove
            </button>
          </li>
        ))}
      </ol>
      {!props.disabled && (
        <input
          id={props.id}
          type="file"
          multiple={multi}
          accept={mimes.length ? mimes.join(",") : undefined}
          aria-describedby={describedBy(props.id, !!hint, props.error)}
          aria-invalid={props.error ? "true" : undefined}
          onChange={(e) => {
            add(e.currentTarget.files);
            e.currentTarget.value = "";
          }}
        />
      )}
    </FieldBox>
  );
}
