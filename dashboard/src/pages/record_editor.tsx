/// <reference lib="dom" />
/**
 * Record editor (not built yet).
 *
 * @module
 */

import type { JSX } from "preact";

/** Record editor. */
export function RecordEditorPage(
  _props: { entity: string; id: string },
): JSX.Element {
  return (
    <section class="card">
      <h1>Record editor</h1>
      <p>Coming soon.</p>
    </section>
  );
}
