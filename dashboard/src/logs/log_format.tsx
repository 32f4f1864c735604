/// <reference lib="dom" />
/**
 * Small shared pieces of the logs pages: the log entry type, local times,
 * `datetime-local` ⇄ ISO, durations, and the level badge.
 *
 * @module
 */

import type { JSX } from "preact";

/** Log levels, least to most severe. */
export const LEVELS = ["trace", "debug", "info", "warn", "error"] as const;

/** One log entry as the API returns it. */
export interface LogEntry {
  id: string;
  time: string;
  level: typeof LEVELS[number];
  type: "request" | "app";
  message: string;
  method: string | null;
  path: string | null;
  status: number | null;
  duration_ms: number | null;
  ip: string | null;
  auth_id: string | null;
  auth_entity: string | null;
  request_id: string | null;
  data: Record<string, unknown> | null;
}

const two = (n: number) => String(n).padStart(2, "0");

/** A local date and time with seconds ("2026-03-01 14:05:09"). */
export function localTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${
    two(d.getHours())
  }:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** An ISO time as a `datetime-local` value (local, to the second). */
export function toLocalInput(iso: string | null): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  return localTime(iso).replace(" ", "T");
}

/** A `datetime-local` value (local time) as ISO, "" when empty or invalid. */
export function fromLocalInput(v: string): string {
  if (!v) return "";
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString();
}

/** A request duration ("3.2 ms", "1.25 s"). */
export function duration(ms: number | null): string {
  if (ms === null) return "";
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

/** The level as a coloured badge (the word is always shown). */
export function LevelBadge(props: { level: string }): JSX.Element {
  const kind = props.level === "error"
    ? "badge-error"
    : props.level === "warn"
    ? "badge-warn"
    : props.level === "info"
    ? "badge-info"
    : "badge-quiet";
  return <span class={`badge ${kind}`}>{props.level}</span>;
}
