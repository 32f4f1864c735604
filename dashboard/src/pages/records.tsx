/// <reference lib="dom" />
/**
 * Records of an entity (not built yet).
 *
 * @module
 */

import type { JSX } from "preact";

/** Records of an entity. */
export function RecordsPage(_props: { entity: string }): JSX.Element {
  return (
    <section class="card">
      <h1>Records of an entity</h1>
      <p>Coming soon.</p>
    </section>
  );
}
