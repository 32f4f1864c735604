/// <reference lib="dom" />
/**
 * The entity form's danger zone: "Delete entity" with confirmation
 * (`DELETE /schemas/:id`, its records and files go with it), and a 409 said
 * in words (a relation field or a view still depends on the entity).
 *
 * @module
 */

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import type { EntitySchema } from "../../../lib/schema/types.ts";
import { mb, MoonbaseError } from "../mb.ts";
import { navigate } from "../router.ts";
import { reloadSchemas } from "../schemas.ts";
import { confirmAction } from "../ui/confirm.tsx";
import { ErrorBox } from "../ui/field.tsx";
import { toast } from "../ui/toast.tsx";

/** The card with the delete button of a saved entity. */
export function DeleteEntity(props: { schema: EntitySchema }): JSX.Element {
  const base = props.schema;
  const [deleteError, setDeleteError] = useState("");
  const remove = async () => {
    setDeleteError("");
    const ok = await confirmAction(
      `Delete entity "${base.name}" with all its records and files? This cannot be undone.`,
      "Delete entity",
    );
    if (!ok) return;
    try {
      await mb.schemas.delete(base.id);
      await reloadSchemas();
      toast(`Entity ${base.name} deleted`);
      navigate("/mb");
    } catch (err) {
      const m = (err as Error).message;
      setDeleteError(
        err instanceof MoonbaseError && err.status === 409
          ? `${m}. Something else still depends on this entity: change or delete that relation field or view first, then delete this entity.`
          : m,
      );
    }
  };
  return (
    <section class="card danger-zone stack" aria-labelledby="danger-h">
      <h2 id="danger-h">Delete entity</h2>
      <p class="muted">
        Drops the table with all its records and files.
      </p>
      <ErrorBox error={deleteError} />
      <div>
        <button type="button" class="btn btn-danger" onClick={remove}>
          Delete entity {base.name}
        </button>
      </div>
    </section>
  );
}
