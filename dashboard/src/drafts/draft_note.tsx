/// <reference lib="dom" />
/**
 * The note over a schema or rules form whose unsaved edits were restored
 * from this browser (drafts.ts), with a button to discard them.
 *
 * @module
 */

import type { JSX } from "preact";
import { draftTime } from "./drafts.ts";

/** "Restored your unsaved changes from 14:05 …" with Discard. */
export function DraftNote(props: {
  at: number;
  /** The schema was saved since the draft was made. */
  stale: boolean;
  onDiscard: () => void;
}): JSX.Element {
  return (
    <div class="notice draft-note row wrap" role="status">
      <span>
        Restored your unsaved changes, kept in this browser{" "}
        {draftTime(props.at)}{" "}
        (your session ended, or the page was left): save them, or discard them.
        {props.stale &&
          " The schema was changed since then: check them before saving."}
      </span>
      <button type="button" class="btn btn-small" onClick={props.onDiscard}>
        Discard restored changes
      </button>
    </div>
  );
}
