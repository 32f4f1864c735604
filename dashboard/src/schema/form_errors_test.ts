/**
 * The entity form's errors go once their input changes, and stay while it
 * holds the refused value (issue 27: a fixed error was still shown).
 */
import assert from "node:assert/strict";
import { errorSubject, shownErrors } from "./form_errors.ts";
import { type FormState, newField, newForm } from "./schema_form.ts";

function form(): FormState {
  const f = { ...newField("int"), key: "k1", name: "n", min: "x" };
  return { ...newForm(), name: "bad name", fields: [f] };
}

Deno.test("form_errors: a changed input loses its error, others keep theirs", () => {
  const refused = form();
  const errors = { name: "Invalid name", "k1.min": "Must be a number" };
  assert.deepEqual(shownErrors(errors, refused, refused), errors);
  const renamed = { ...refused, name: "good" };
  assert.deepEqual(shownErrors(errors, refused, renamed), {
    "k1.min": "Must be a number",
  });
  const fixed = {
    ...renamed,
    fields: [{ ...renamed.fields[0], min: "1" }],
  };
  assert.deepEqual(shownErrors(errors, refused, fixed), {});
  // Typed back to the refused value: the error is shown again.
  assert.deepEqual(
    shownErrors(errors, refused, { ...fixed, name: "bad name" }),
    {
      name: "Invalid name",
    },
  );
});

Deno.test("form_errors: a field's type change clears its option errors", () => {
  const refused = form();
  const retyped = {
    ...refused,
    fields: [{ ...refused.fields[0], type: "string" as const }],
  };
  assert.notEqual(
    errorSubject(refused, "k1.min"),
    errorSubject(retyped, "k1.min"),
  );
  // A key the form does not know is about the whole form.
  assert.equal(errorSubject(refused, "zz"), JSON.stringify(refused));
});
