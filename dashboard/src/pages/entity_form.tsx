/// <reference lib="dom" />
/**
 * Entity form (not built yet).
 *
 * @module
 */

import type { JSX } from "preact";

/** Entity form. */
export function EntityFormPage(_props: { entity?: string }): JSX.Element {
  return (
    <section class="card">
      <h1>Entity form</h1>
      <p>Coming soon.</p>
    </section>
  );
}
