/// <reference lib="dom" />
/**
 * The sidebar: every entity with its type and record count (searchable),
 * then the system pages (logs, admins, API keys, backups, settings, about).
 *
 * @module
 */

import type { ComponentChildren, JSX } from "preact";
import { useState } from "preact/hooks";
import { entityHref, path } from "../router.ts";
import { countLabel, counts, schemas, schemasError } from "../schemas.ts";

const TYPE_LABEL: Record<string, string> = {
  base: "base",
  auth: "auth",
  view: "view",
};

function NavLink(props: {
  href: string;
  children: ComponentChildren;
  active: boolean;
}): JSX.Element {
  return (
    <a
      href={props.href}
      class={props.active ? "nav-link active" : "nav-link"}
      aria-current={props.active ? "page" : undefined}
    >
      {props.children}
    </a>
  );
}

/** The sidebar navigation. */
export function Sidebar(): JSX.Element {
  const [q, setQ] = useState("");
  const all = (schemas.value ?? []).filter((s) => s.name !== "mb_admins");
  const shown = all.filter((s) =>
    s.name.toLowerCase().includes(q.trim().toLowerCase())
  );
  const p = path.value;
  const c = counts.value;
  return (
    <nav class="sidebar" aria-label="Main">
      <div class="sidebar-head">
        <label class="sr-only" for="entity-search">Search entities</label>
        <input
          id="entity-search"
          type="search"
          placeholder="Search entities"
          value={q}
          onInput={(e) => setQ(e.currentTarget.value)}
        />
      </div>
      <h2 class="nav-title">Entities</h2>
      {schemasError.value && (
        <p class="error-text" role="alert">{schemasError.value}</p>
      )}
      <ul class="nav-list">
        {shown.map((s) => {
          const href = entityHref(s.name);
          const n = c[s.name];
          return (
            <li key={s.id}>
              <NavLink
                href={href}
                active={p === href || p.startsWith(href + "/")}
              >
                <span class="nav-name">{s.name}</span>
                <span class={`badge badge-${s.type}`}>
                  {TYPE_LABEL[s.type] ?? s.type}
                </span>
                <span
                  class="count"
                  aria-label={typeof n !== "number"
                    ? undefined
                    : `${countLabel(n)} records`}
                >
                  {typeof n !== "number" ? "" : countLabel(n)}
                </span>
              </NavLink>
            </li>
          );
        })}
        {schemas.value && shown.length === 0 && (
          <li class="muted nav-empty">
            {all.length ? "No entity matches." : "No entities yet."}
          </li>
        )}
      </ul>
      <a class="btn btn-block" href="/mb/entities/new">+ New entity</a>
      <a class="btn btn-block" href="/mb/schemas">Export / import schemas</a>
      <h2 class="nav-title">System</h2>
      <ul class="nav-list">
        <li>
          <NavLink href="/mb/logs" active={p.startsWith("/mb/logs")}>
            Logs
          </NavLink>
        </li>
        <li>
          <NavLink href="/mb/admins" active={p.startsWith("/mb/admins")}>
            Admins
          </NavLink>
        </li>
        <li>
          <NavLink href="/mb/api-keys" active={p.startsWith("/mb/api-keys")}>
            API keys
          </NavLink>
        </li>
        <li>
          <NavLink href="/mb/backups" active={p === "/mb/backups"}>
            Backups
          </NavLink>
        </li>
        <li>
          <NavLink href="/mb/settings" active={p === "/mb/settings"}>
            Settings
          </NavLink>
        </li>
        <li>
          <NavLink href="/mb/api" active={p === "/mb/api"}>
            API reference
          </NavLink>
        </li>
        <li>
          <NavLink href="/mb/about" active={p === "/mb/about"}>
            Health &amp; about
          </NavLink>
        </li>
      </ul>
    </nav>
  );
}
