/// <reference lib="dom" />
/**
 * `/mb/admins`: every admin (email, created, id; the one logged in marked
 * "you"), a form for a new one, a password change dialog, and delete with
 * confirmation. The last admin cannot be deleted: its button is disabled
 * with the reason, and the API's 409 is shown in words if it happens anyway.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { mb, MoonbaseError, type Page } from "../mb.ts";
import { navigate } from "../router.ts";
import { session } from "../session/session.ts";
import { AdminCreateForm } from "./admin_create.tsx";
import { confirmAction } from "../ui/confirm.tsx";
import { ErrorBox } from "../ui/field.tsx";
import { localTime } from "../logs/log_format.tsx";
import { PasswordDialog, type PasswordTarget } from "./password_dialog.tsx";
import { toast } from "../ui/toast.tsx";

/** An admin as the API lists it. */
interface Admin {
  id: string;
  email: string;
  created: string;
  updated?: string;
}

/** The admins page. */
export function AdminsPage(_props: Record<string, never>): JSX.Element {
  const [page, setPage] = useState<Page<Admin> | null>(null);
  const [error, setError] = useState("");
  const [tick, setTick] = useState(0);
  const [pw, setPw] = useState<PasswordTarget | null>(null);
  const me = session.user.value?.id ?? "";

  useEffect(() => {
    const ac = new AbortController();
    mb.send<Page<Admin>>("GET", "/api/v1/sys/admins", {
      query: { limit: "500", sort: "created" },
      signal: ac.signal,
    }).then(setPage).catch((e) => {
      // Anything else is the abort of a page left meanwhile.
      if (e instanceof MoonbaseError) setError(e.message);
    });
    return () => ac.abort();
  }, [tick]);

  const reload = () => setTick((n) => n + 1);
  const only = page?.items.length === 1 && !page.has_more;

  const remove = async (a: Admin) => {
    const self = a.id === me;
    const ok = await confirmAction(
      self
        ? `Delete your own admin account ${a.email}? You will be logged out.`
        : `Delete the admin ${a.email}? They lose access at once.`,
      "Delete admin",
    );
    if (!ok) return;
    setError("");
    try {
      await mb.admins.delete(a.id);
      toast(`Admin ${a.email} deleted`);
      if (self) {
        await session.logout();
        navigate("/mb/login", true);
        return;
      }
      reload();
    } catch (e) {
      if (!(e instanceof MoonbaseError)) throw e;
      const msg = e.status === 409
        ? `Cannot delete ${a.email}: it is the last admin, and a server needs at least one. Create another admin first.`
        : e.message;
      setError(msg);
      toast(msg, "error");
      reload();
    }
  };

  return (
    <section class="admins-page">
      <div class="page-head">
        <h1>Admins</h1>
        <p class="muted">
          Admins manage every entity, rule, record and log of this server.
        </p>
      </div>
      <ErrorBox error={error} />
      {!page && !error && <p class="muted">Loading…</p>}
      {page && (
        <div class="table-wrap admins-table">
          <table class="data">
            <caption class="sr-only">Admins</caption>
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col" class="wide-only">Created</th>
                <th scope="col" class="wide-only">Id</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {page.items.map((a) => (
                <tr key={a.id}>
                  <td class="admin-email">
                    {a.email}{" "}
                    {a.id === me && <span class="badge badge-you">you</span>}
                    <small class="narrow-only muted">
                      created {localTime(a.created)}
                    </small>
                  </td>
                  <td class="wide-only">
                    <time dateTime={a.created}>{localTime(a.created)}</time>
                  </td>
                  <td class="mono wide-only" title={a.id}>{a.id}</td>
                  <td class="actions">
                    <div class="row wrap">
                      <button
                        type="button"
                        class="btn btn-small"
                        aria-label={`Change password of ${a.email}`}
                        onClick={() =>
                          setPw({
                            id: a.id,
                            email: a.email,
                            self: a.id === me,
                          })}
                      >
                        Change password
                      </button>
                      <button
                        type="button"
                        class="btn btn-small btn-danger"
                        aria-label={`Delete ${a.email}`}
                        disabled={only}
                        aria-describedby={only ? "last-admin-note" : undefined}
                        onClick={() => remove(a)}
                      >
                        Delete
                      </button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {only && (
        <p id="last-admin-note" class="muted last-admin-note">
          The only admin cannot be deleted: a server needs at least one. Create
          another admin first.
        </p>
      )}
      {page?.has_more && <p class="notice">Showing the first 500 admins.</p>}
      <AdminCreateForm onCreated={reload} />
      {pw && (
        <PasswordDialog
          target={pw}
          onClose={() => {
            setPw(null);
            reload();
          }}
        />
      )}
    </section>
  );
}
