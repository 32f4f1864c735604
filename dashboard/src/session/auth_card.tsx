/// <reference lib="dom" />
/**
 * The card of the pages shown before a session (login, first-admin setup):
 * a form centred on the page under the Moonbase mark and a title.
 *
 * @module
 */

import type { ComponentChildren, JSX } from "preact";

/** The page with its one form; `children` are the form's contents. */
export function AuthCard(props: {
  title: string;
  onSubmit: (e: Event) => void;
  children: ComponentChildren;
}): JSX.Element {
  return (
    <main class="auth-page">
      <form class="card auth-card" onSubmit={props.onSubmit}>
        <h1>
          <img src="/mb/assets/favicon.svg" alt="" width="28" height="28" />
          {" "}
          {props.title}
        </h1>
        {props.children}
      </form>
    </main>
  );
}
