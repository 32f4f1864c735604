/**
 * What every measured system shares: the scenarios by name, the seeded data
 * (10 000 records of bench/seed.ts's `items` shape: `title`, `n` = 0…9999,
 * `tag` = `t${n % 10}`, `n` and `tag` indexed) and a started system.
 *
 * @module
 */

import type { Target } from "../load.ts";
import type { Proc } from "../procs.ts";

/** The scenarios, in order; each system measures those it has. */
export const SCENARIOS = [
  "GET by id (public)",
  "list 50",
  "list filter + sort",
  "create",
] as const;

/** A scenario's name. */
export type ScenarioName = typeof SCENARIOS[number];

/** Records seeded in every system. */
export const COUNT = 10_000;

/** The record fetched by id: the one with `n` = COUNT / 2. */
export const MIDDLE = COUNT / 2;

/** The filter + sort scenario's query, in words every system expresses. */
export const FILTER = { gte: 2000, lt: 4000, tag: "t3" } as const;

/** The body of a create. */
export const CREATE_BODY = '{"title":"bench","n":1,"tag":"x"}';

/** The i-th seeded record. */
export function record(i: number): { title: string; n: number; tag: string } {
  return { title: `item ${i}`, n: i, tag: `t${i % 10}` };
}

/** A started, seeded system. */
export interface System {
  /** "Directus", "Parse Server", "Moonbase". */
  name: string;
  version: string;
  /** "SQLite", "PostgreSQL". */
  database: string;
  proc: Proc;
  /** Requests per scenario (missing: the system has no such query). */
  targets: Partial<Record<ScenarioName, Target>>;
  /** Stops the server. */
  stop(): Promise<void>;
}

/** Runs `fn` over `items` with at most `n` at a time. */
export async function pool<T>(
  items: T[],
  n: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: n }, worker));
}

/** `fetch` that throws unless the answer is 2xx, and returns its JSON. */
export async function call(
  url: string,
  init: RequestInit = {},
): Promise<unknown> {
  const res = await fetch(url, init);
  const text = await res.text();
  if (!res.ok) {
    throw new Error(
      `Cannot ${init.method ?? "GET"} ${url}: ${res.status} ${
        text.slice(0, 300)
      }`,
    );
  }
  return text ? JSON.parse(text) : null;
}
