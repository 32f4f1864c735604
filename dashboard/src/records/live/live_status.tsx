/// <reference lib="dom" />
/**
 * What the records table shows of live updates: the "Live" indicator
 * (connected, connecting, reconnecting or off, named for screen readers)
 * and the "N new records — Show" notice for records that joined the view
 * where inserting them would move rows under the reader.
 *
 * @module
 */

import type { JSX } from "preact";
import type { Waiting } from "./live_apply.ts";
import { waitingText } from "./live_apply.ts";
import type { LiveState } from "./live_stream.ts";

const WORDS: Record<LiveState, [text: string, name: string]> = {
  live: ["Live", "Live updates: connected"],
  connecting: ["Connecting…", "Live updates: connecting"],
  reconnecting: ["Reconnecting…", "Live updates: reconnecting"],
  off: ["Live off", "Live updates: off"],
};

/** The live indicator. */
export function LiveBadge(
  props: { state: LiveState; why: string },
): JSX.Element {
  const [text, name] = WORDS[props.state];
  return (
    <span
      class={`live-badge live-${props.state}`}
      role="status"
      aria-label={name}
      title={props.why ? `${name} (${props.why})` : name}
    >
      <span class="live-dot" aria-hidden="true" />
      {text}
    </span>
  );
}

/** The notice of records waiting to be shown (an empty live region else). */
export function LiveNotice(props: {
  waiting: ReadonlyMap<string, Waiting>;
  onShow: () => void;
}): JSX.Element {
  const text = waitingText(props.waiting);
  return (
    <span class="live-notice" aria-live="polite">
      {text
        ? (
          <>
            <span>{text}</span>
            <button
              type="button"
              class="btn btn-small btn-primary"
              aria-label={`Show ${text.replaceAll(" · ", ", ")}`}
              onClick={props.onShow}
            >
              Show
            </button>
          </>
        )
        : null}
    </span>
  );
}
