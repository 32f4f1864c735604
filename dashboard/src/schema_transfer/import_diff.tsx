/// <reference lib="dom" />
/**
 * What an import changes, entity by entity: each entity created, changed
 * or deleted, and under it each part that changes (`fields.title`,
 * `rules.list`, …) with `from → to` for every value.
 *
 * @module
 */

import type { JSX } from "preact";
import {
  type Action,
  detailView,
  type DiffLine,
  DONE,
  type EntityChange,
} from "./transfer_diff.ts";

const BADGE: Record<Action, string> = {
  create: "badge-ok",
  update: "badge-base",
  delete: "badge-error",
};

/** An entity's change as a badge ("created"). */
function ActionBadge(props: { action: Action }): JSX.Element {
  return (
    <span class={`badge ${BADGE[props.action]}`}>{DONE[props.action]}</span>
  );
}

function Line(props: { line: DiffLine }): JSX.Element {
  const { label, from, to } = props.line;
  return (
    <>
      {label && (
        <>
          <code class="diff-label">{label}</code>:{" "}
        </>
      )}
      {from !== undefined && (
        <>
          {to !== undefined && <span class="sr-only">from</span>}
          <span class="diff-from">{from}</span>
        </>
      )}
      {from !== undefined && to !== undefined && (
        <>
          {" "}
          <span aria-hidden="true">→</span>
          <span class="sr-only">to</span>
          {" "}
        </>
      )}
      {to !== undefined && <span class="diff-to">{to}</span>}
    </>
  );
}

/** The changes of one import (dry run or applied). */
export function ImportDiff(props: {
  changes: readonly EntityChange[];
}): JSX.Element {
  return (
    <ol class="diff-entities">
      {props.changes.map((c) => (
        <li key={c.entity} class={`diff-entity diff-${c.action}`}>
          <h4 class="diff-entity-head">
            <ActionBadge action={c.action} /> <code>{c.entity}</code>
          </h4>
          <ul class="diff-details">
            {c.details.map(detailView).map((v, i) => (
              <li key={`${v.key}/${i}`} class={`diff-detail diff-${v.action}`}>
                <span class="diff-key">
                  <code>{v.key}</code>{" "}
                  <span class="muted">{DONE[v.action]}</span>
                </span>
                {v.lines.length === 1 && !v.lines[0].label
                  ? (
                    <span class="diff-line">
                      {" "}
                      <Line line={v.lines[0]} />
                    </span>
                  )
                  : (
                    <ul class="diff-lines">
                      {v.lines.map((l) => (
                        <li key={l.label} class="diff-line">
                          <Line line={l} />
                        </li>
                      ))}
                    </ul>
                  )}
              </li>
            ))}
          </ul>
        </li>
      ))}
    </ol>
  );
}
