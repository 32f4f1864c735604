/// <reference lib="dom" />
/**
 * Health and about (not built yet).
 *
 * @module
 */

import type { JSX } from "preact";

/** Health and about. */
export function AboutPage(_props: Record<string, never>): JSX.Element {
  return (
    <section class="card">
      <h1>Health and about</h1>
      <p>Coming soon.</p>
    </section>
  );
}
