/// <reference lib="dom" />
/**
 * The logged-in frame: a top bar (menu toggle on narrow screens, toasts,
 * the admin's email, log out), the sidebar and the page.
 *
 * @module
 */

import type { ComponentChildren, JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { navigate, path } from "../router.ts";
import { session } from "../session/session.ts";
import { Toasts } from "../ui/toast.tsx";
import { Sidebar } from "./sidebar.tsx";

/** The frame around every logged-in page. */
export function Shell(props: { children: ComponentChildren }): JSX.Element {
  const [open, setOpen] = useState(false);
  // Navigating closes the menu on narrow screens.
  useEffect(() => setOpen(false), [path.value]);
  return (
    <div class={open ? "shell menu-open" : "shell"}>
      <a class="skip-link" href="#content">Skip to content</a>
      <header class="topbar">
        <button
          type="button"
          class="btn menu-toggle"
          aria-expanded={open}
          aria-controls="sidebar"
          onClick={() => setOpen(!open)}
        >
          Menu
        </button>
        <a class="brand" href="/mb">
          <img src="/mb/assets/favicon.svg" alt="" width="24" height="24" />
          <span>Moonbase</span>
        </a>
        <Toasts bar />
        <span class="who" title="Logged in as">
          {session.user.value?.email}
        </span>
        <button
          type="button"
          class="btn btn-ghost"
          onClick={async () => {
            await session.logout();
            navigate("/mb/login", true);
          }}
        >
          Log out
        </button>
      </header>
      <div class="body">
        <div id="sidebar" class="sidebar-wrap">
          <Sidebar />
        </div>
        <main id="content" class="content" tabIndex={-1}>
          {props.children}
        </main>
      </div>
    </div>
  );
}
