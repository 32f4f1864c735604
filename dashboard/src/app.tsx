/// <reference lib="dom" />
/**
 * The app: first-run check, the session gate (login returns to the page
 * the admin was on), the route table, and the document title of each page
 * ("posts · Rules · Moonbase").
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { mb } from "./mb.ts";
import { Shell } from "./shell/shell.tsx";
import { AboutPage } from "./ops/about.tsx";
import { AdminsPage } from "./admins/admins.tsx";
import { ApiKeysPage } from "./api_keys/api_keys.tsx";
import { BackupsPage } from "./backups/backups.tsx";
import { AuthTabPage } from "./schema/auth_tab.tsx";
import { ApiTabPage } from "./api_docs/api_tab.tsx";
import { ApiReferencePage } from "./api_docs/reference.tsx";
import { EntityFormPage } from "./schema/entity_form.tsx";
import { FilesPage } from "./files/files.tsx";
import { HomePage } from "./shell/home.tsx";
import { LogDetailPage } from "./logs/log_detail.tsx";
import { LoginPage } from "./session/login.tsx";
import { LogsPage } from "./logs/logs.tsx";
import { NotFound } from "./ui/not_found.tsx";
import { RecordEditorPage } from "./records/record_editor.tsx";
import { RecordsPage } from "./records/records.tsx";
import { RulesPage } from "./rules/rules.tsx";
import { SchemaTransferPage } from "./schema_transfer/schema_transfer.tsx";
import { SettingsPage } from "./settings/settings.tsx";
import { ClaimHelp, SetupPage, setupRequired } from "./session/setup.tsx";
import { here, match, navigate, path } from "./router.ts";
import { reloadSchemas, schemas } from "./schemas.ts";
import { session } from "./session/session.ts";
import { ConfirmDialog } from "./ui/confirm.tsx";
import { Toasts } from "./ui/toast.tsx";

type Params = Record<string, string>;
type Route = [string, (p: Params) => JSX.Element, (p: Params) => string];

const shortId = (id: string) => id.length > 12 ? "…" + id.slice(-8) : id;

/** Logged-in pages (with their title), first match wins. */
const ROUTES: Route[] = [
  ["/mb", () => <HomePage />, () => "Entities"],
  ["/mb/entities/new", () => <EntityFormPage />, () => "New entity"],
  ["/mb/schemas", () => <SchemaTransferPage />, () => "Schema export / import"],
  [
    "/mb/entities/:name",
    (p) => <RecordsPage key={p.name} entity={p.name} />,
    (p) => `${p.name} · Records`,
  ],
  [
    "/mb/entities/:name/files",
    (p) => <FilesPage key={p.name} entity={p.name} />,
    (p) => `${p.name} · Files`,
  ],
  [
    "/mb/entities/:name/schema",
    (p) => <EntityFormPage key={p.name} entity={p.name} />,
    (p) => `${p.name} · Schema`,
  ],
  [
    "/mb/entities/:name/rules",
    (p) => <RulesPage key={p.name} entity={p.name} />,
    (p) => `${p.name} · Rules`,
  ],
  [
    "/mb/entities/:name/auth",
    (p) => <AuthTabPage key={p.name} entity={p.name} />,
    (p) => `${p.name} · Auth`,
  ],
  [
    "/mb/entities/:name/api",
    (p) => <ApiTabPage key={p.name} entity={p.name} />,
    (p) => `${p.name} · API`,
  ],
  [
    "/mb/entities/:name/records/:id",
    (p) => (
      <RecordEditorPage key={p.name + "/" + p.id} entity={p.name} id={p.id} />
    ),
    (p) =>
      p.id === "new"
        ? `New ${p.name} record`
        : `${p.name} record ${shortId(p.id)}`,
  ],
  ["/mb/logs", () => <LogsPage />, () => "Logs"],
  [
    "/mb/logs/:id",
    (p) => <LogDetailPage key={p.id} id={p.id} />,
    (p) => `Log entry ${shortId(p.id)}`,
  ],
  ["/mb/admins", () => <AdminsPage />, () => "Admins"],
  ["/mb/api-keys", () => <ApiKeysPage />, () => "API keys"],
  ["/mb/backups", () => <BackupsPage />, () => "Backups"],
  ["/mb/settings", () => <SettingsPage />, () => "Settings"],
  ["/mb/about", () => <AboutPage />, () => "Health & about"],
  ["/mb/api", () => <ApiReferencePage />, () => "API reference"],
];

/** The page of a logged-in path and its title. */
function routed(p: string): { page: JSX.Element; title: string } {
  const clean = p.length > 3 && p.endsWith("/") ? p.slice(0, -1) : p;
  for (const [pattern, render, title] of ROUTES) {
    const params = match(pattern, clean);
    if (params) return { page: render(params), title: title(params) };
  }
  return { page: <NotFound />, title: "Not found" };
}

/** The document title: the page's name first, then "Moonbase". */
function useTitle(title: string): void {
  useEffect(() => {
    document.title = title ? `${title} · Moonbase` : "Moonbase";
  }, [title]);
}

/** The whole dashboard. */
export function App(): JSX.Element {
  const setup = setupRequired.value;
  const [setupError, setSetupError] = useState("");
  const p = path.value;
  const loggedIn = session.token.value !== "";
  useEffect(() => {
    mb.admins.setupRequired()
      .then((required) => setupRequired.value = required)
      .catch((e) => setSetupError((e as Error).message));
  }, []);
  useEffect(() => {
    if (loggedIn) void reloadSchemas();
    else schemas.value = null;
  }, [loggedIn]);
  // Logged out on a protected page: to the login form, then back here.
  useEffect(() => {
    if (
      setup === false && !loggedIn && p !== "/mb/login" && p !== "/mb/setup"
    ) {
      navigate(`/mb/login?next=${encodeURIComponent(here())}`, true);
    }
  }, [setup, loggedIn, p]);
  let page: JSX.Element;
  let title = "";
  let framed = false;
  if (setupError) {
    title = "Cannot reach the server";
    page = (
      <main class="auth-page">
        <section class="card auth-card" role="alert">
          <h1>Cannot reach the server</h1>
          <p>{setupError}</p>
        </section>
      </main>
    );
  } else if (setup === null) page = <p class="boot">Loading Moonbase…</p>;
  else if (p === "/mb/setup") {
    title = "Set up";
    page = <SetupPage required={setup} />;
  } else if (setup) {
    title = "Welcome";
    page = (
      <main class="auth-page">
        <section class="card auth-card">
          <h1>
            <img src="/mb/assets/favicon.svg" alt="" width="28" height="28" />
            {" "}
            Welcome to Moonbase
          </h1>
          <ClaimHelp />
        </section>
      </main>
    );
  } else if (p === "/mb/login") {
    title = loggedIn ? "" : "Log in";
    page = loggedIn ? <Redirect to="/mb" /> : <LoginPage />;
  } else if (!loggedIn) page = <p class="boot">Loading Moonbase…</p>;
  else {
    const r = routed(p);
    title = r.title;
    framed = true;
    page = <Shell>{r.page}</Shell>;
  }
  useTitle(title);
  return (
    <>
      {page}
      {!framed && <Toasts />}
      <ConfirmDialog />
    </>
  );
}

function Redirect(props: { to: string }): JSX.Element {
  useEffect(() => navigate(props.to, true), [props.to]);
  return <p class="boot">Loading Moonbase…</p>;
}
