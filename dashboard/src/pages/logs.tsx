/// <reference lib="dom" />
/**
 * Logs (not built yet).
 *
 * @module
 */

import type { JSX } from "preact";

/** Logs. */
export function LogsPage(_props: Record<string, never>): JSX.Element {
  return (
    <section class="card">
      <h1>Logs</h1>
      <p>Coming soon.</p>
    </section>
  );
}
