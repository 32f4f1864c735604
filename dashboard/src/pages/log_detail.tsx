/// <reference lib="dom" />
/**
 * Log entry (not built yet).
 *
 * @module
 */

import type { JSX } from "preact";

/** Log entry. */
export function LogDetailPage(_props: { id: string }): JSX.Element {
  return (
    <section class="card">
      <h1>Log entry</h1>
      <p>Coming soon.</p>
    </section>
  );
}
