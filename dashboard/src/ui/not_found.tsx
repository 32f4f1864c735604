/// <reference lib="dom" />
/**
 * The page for an unknown dashboard path or entity.
 *
 * @module
 */

import type { JSX } from "preact";

/** "Not found", with a way back. */
export function NotFound(props: { what?: string }): JSX.Element {
  return (
    <section class="card">
      <h1>Not found</h1>
      <p>{props.what ?? "There is no such page."}</p>
      <a class="btn" href="/mb">Back to the dashboard</a>
    </section>
  );
}
