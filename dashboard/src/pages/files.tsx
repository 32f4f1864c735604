/// <reference lib="dom" />
/**
 * Files of an entity (not built yet).
 *
 * @module
 */

import type { JSX } from "preact";

/** Files of an entity. */
export function FilesPage(_props: { entity: string }): JSX.Element {
  return (
    <section class="card">
      <h1>Files of an entity</h1>
      <p>Coming soon.</p>
    </section>
  );
}
