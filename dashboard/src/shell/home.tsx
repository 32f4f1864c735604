/// <reference lib="dom" />
/**
 * `/mb`: an overview of the entities, or a first step when there are none.
 *
 * @module
 */

import type { JSX } from "preact";
import { entityHref } from "../router.ts";
import { countLabel, counts, schemas } from "../schemas.ts";

/** "1 field", "3 fields", "10,000+ records". */
function plural(n: number, noun: string): string {
  return `${countLabel(n)} ${noun}${n === 1 ? "" : "s"}`;
}

/** The start page. */
export function HomePage(): JSX.Element {
  const list = (schemas.value ?? []).filter((s) => !s.is_system);
  return (
    <section>
      <div class="page-head">
        <h1>Entities</h1>
      </div>
      {schemas.value && list.length === 0 && (
        <div class="card empty">
          <p>No entities yet. An entity is a table with its own REST API.</p>
          <a class="btn btn-primary" href="/mb/entities/new">
            Create your first entity
          </a>
        </div>
      )}
      <ul class="cards">
        {list.map((s) => (
          <li key={s.id} class="card">
            <a href={entityHref(s.name)} class="card-link">
              <strong>{s.name}</strong>{" "}
              <span class={`badge badge-${s.type}`}>{s.type}</span>
            </a>
            <p class="muted">
              {plural(s.fields.filter((f) => !f.system).length, "field")} ·{" "}
              {typeof counts.value[s.name] === "number"
                ? plural(counts.value[s.name] as number, "record")
                : "? records"}
            </p>
          </li>
        ))}
      </ul>
    </section>
  );
}
