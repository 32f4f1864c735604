/// <reference lib="dom" />
/**
 * Admins (not built yet).
 *
 * @module
 */

import type { JSX } from "preact";

/** Admins. */
export function AdminsPage(_props: Record<string, never>): JSX.Element {
  return (
    <section class="card">
      <h1>Admins</h1>
      <p>Coming soon.</p>
    </section>
  );
}
