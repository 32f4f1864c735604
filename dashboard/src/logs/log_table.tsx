/// <reference lib="dom" />
/**
 * The log entries table: local time (a link to the entry), level badge,
 * type, message (a request's method, path and status), duration and client
 * IP. A row click opens the entry too; entries new from the live tail are
 * highlighted.
 *
 * @module
 */

import type { JSX } from "preact";
import { navigate } from "../router.ts";
import {
  duration,
  LevelBadge,
  localTime,
  type LogEntry,
} from "./log_format.tsx";

/** The `/mb` link of one entry. */
export const logHref = (id: string): string =>
  `/mb/logs/${encodeURIComponent(id)}`;

function Message(props: { e: LogEntry }): JSX.Element {
  const e = props.e;
  if (e.type === "request" && e.method) {
    const st = e.status ?? 0;
    const cls = st >= 500
      ? "status status-error"
      : st >= 400
      ? "status status-warn"
      : "status";
    return (
      <span title={e.message}>
        <span class="method">{e.method}</span> {e.path}{" "}
        <span class={cls}>{e.status}</span>
      </span>
    );
  }
  return <span title={e.message}>{e.message}</span>;
}

/** The table (the caller shows "no entries" itself). */
export function LogTable(props: {
  items: LogEntry[];
  fresh: Set<string>;
}): JSX.Element {
  return (
    <div class="table-wrap">
      <table class="data log-table">
        <caption class="sr-only">Log entries, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Level</th>
            <th scope="col" class="log-type">Type</th>
            <th scope="col">Message</th>
            <th scope="col">Duration</th>
            <th scope="col">IP</th>
          </tr>
        </thead>
        <tbody>
          {props.items.map((e) => (
            <tr
              key={e.id}
              class={props.fresh.has(e.id) ? "clickable fresh" : "clickable"}
              onClick={(ev) => {
                // The time cell's link does the keyboard's work.
                if ((ev.target as Element).closest("a")) return;
                if (getSelection()?.toString()) return;
                navigate(logHref(e.id));
              }}
            >
              <td class="nowrap">
                <a href={logHref(e.id)}>
                  <time dateTime={e.time}>{localTime(e.time)}</time>
                </a>
              </td>
              <td>
                <LevelBadge level={e.level} />
              </td>
              <td class="log-type">{e.type}</td>
              <td class="log-message">
                <Message e={e} />
              </td>
              <td class="num">{duration(e.duration_ms)}</td>
              <td class="mono">{e.ip ?? ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
