/// <reference lib="dom" />
/**
 * The app: first-run check, the session gate (login returns to the page
 * the admin was on), and the route table.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api.ts";
import { Shell } from "./layout/shell.tsx";
import { AboutPage } from "./pages/about.tsx";
import { AdminsPage } from "./pages/admins.tsx";
import { EntityFormPage } from "./pages/entity_form.tsx";
import { FilesPage } from "./pages/files.tsx";
import { HomePage } from "./pages/home.tsx";
import { LogDetailPage } from "./pages/log_detail.tsx";
import { LoginPage } from "./pages/login.tsx";
import { LogsPage } from "./pages/logs.tsx";
import { NotFound } from "./pages/not_found.tsx";
import { RecordEditorPage } from "./pages/record_editor.tsx";
import { RecordsPage } from "./pages/records.tsx";
import { RulesPage } from "./pages/rules.tsx";
import { ClaimHelp, SetupPage, setupRequired } from "./pages/setup.tsx";
import { here, match, navigate, path } from "./router.ts";
import { reloadSchemas, schemas } from "./schemas.ts";
import { session } from "./session.ts";
import { ConfirmDialog } from "./ui/confirm.tsx";
import { Toasts } from "./ui/toast.tsx";

type Route = [string, (p: Record<string, string>) => JSX.Element];

/** Logged-in pages, first match wins. */
const ROUTES: Route[] = [
  ["/mb", () => <HomePage />],
  ["/mb/entities/new", () => <EntityFormPage />],
  ["/mb/entities/:name", (p) => <RecordsPage key={p.name} entity={p.name} />],
  [
    "/mb/entities/:name/files",
    (p) => <FilesPage key={p.name} entity={p.name} />,
  ],
  [
    "/mb/entities/:name/schema",
    (p) => <EntityFormPage key={p.name} entity={p.name} />,
  ],
  [
    "/mb/entities/:name/rules",
    (p) => <RulesPage key={p.name} entity={p.name} />,
  ],
  [
    "/mb/entities/:name/records/:id",
    (p) => (
      <RecordEditorPage key={p.name + "/" + p.id} entity={p.name} id={p.id} />
    ),
  ],
  ["/mb/logs", () => <LogsPage />],
  ["/mb/logs/:id", (p) => <LogDetailPage key={p.id} id={p.id} />],
  ["/mb/admins", () => <AdminsPage />],
  ["/mb/about", () => <AboutPage />],
];

function routed(p: string): JSX.Element {
  const clean = p.length > 3 && p.endsWith("/") ? p.slice(0, -1) : p;
  for (const [pattern, render] of ROUTES) {
    const params = match(pattern, clean);
    if (params) return render(params);
  }
  return <NotFound />;
}

/** The whole dashboard. */
export function App(): JSX.Element {
  const setup = setupRequired.value;
  const [setupError, setSetupError] = useState("");
  const p = path.value;
  const loggedIn = session.token.value !== "";
  useEffect(() => {
    api.get<{ required: boolean }>("/sys/admins/setup", { anonymous: true })
      .then((d) => setupRequired.value = d.required)
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
  if (setupError) {
    page = (
      <main class="auth-page">
        <section class="card auth-card" role="alert">
          <h1>Cannot reach the server</h1>
          <p>{setupError}</p>
        </section>
      </main>
    );
  } else if (setup === null) page = <p class="boot">Loading Moonbase…</p>;
  else if (p === "/mb/setup") page = <SetupPage required={setup} />;
  else if (setup) {
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
    page = loggedIn ? <Redirect to="/mb" /> : <LoginPage />;
  } else if (!loggedIn) page = <p class="boot">Loading Moonbase…</p>;
  else page = <Shell>{routed(p)}</Shell>;
  return (
    <>
      {page}
      <Toasts />
      <ConfirmDialog />
    </>
  );
}

function Redirect(props: { to: string }): JSX.Element {
  useEffect(() => navigate(props.to, true), [props.to]);
  return <p class="boot">Loading Moonbase…</p>;
}
