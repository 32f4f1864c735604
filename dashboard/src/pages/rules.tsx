/// <reference lib="dom" />
/**
 * Access rules (not built yet).
 *
 * @module
 */

import type { JSX } from "preact";

/** Access rules. */
export function RulesPage(_props: { entity: string }): JSX.Element {
  return (
    <section class="card">
      <h1>Access rules</h1>
      <p>Coming soon.</p>
    </section>
  );
}
