/// <reference lib="dom" />
/**
 * "Test as": pick a guest or a user (an auth entity and a search over its
 * users), then see for the first records whether a rule — the one being
 * edited, saved or not — lets that caller through one operation.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { mb, type RecordData } from "../mb.ts";
import { schemas } from "../schemas.ts";
import type { Operation, Rule } from "../../../lib/schema/types.ts";

/** One record's outcome, as `POST /sys/rules/test` answers. */
interface TrialItem {
  id: string;
  label: string;
  allowed: boolean;
  status?: number;
  error?: string;
}

interface TrialResult {
  items: TrialItem[];
  as: { type: "guest" | "user"; id: string; entity: string };
  denied: string | null;
  compiled: "sql" | "per-row" | null;
  request: { method: string };
}

const OP_WORDS: Record<Operation, string> = {
  list: "list",
  get: "read",
  add: "add",
  update: "update",
  delete: "delete",
};

/** Users of an auth entity whose email contains `q` (first 20). */
async function findUsers(entity: string, q: string): Promise<RecordData[]> {
  const page = await mb.entity(entity).list({
    limit: 20,
    sort: "email",
    fields: "id,email",
    filter: q.trim() ? `email.includes(${JSON.stringify(q.trim())})` : "",
  });
  return page.items;
}

/** What the panel was set to, per entity: kept when the editor is made anew. */
interface TestAsChoice {
  op: Operation;
  who: string;
  q: string;
  userId: string;
}

/**
 * The last choice per entity: saving rules makes the rules editor anew (it
 * is keyed by the schema's `updated`), which must not reset "test as".
 */
const choices = new Map<string, TestAsChoice>();

/** The panel; `ops` are the operations offered, `rules` the rules as edited. */
export function TestAs(props: {
  entity: string;
  ops: Operation[];
  rules: Record<Operation, Rule>;
}): JSX.Element {
  const authEntities = (schemas.value ?? []).filter((s) =>
    s.type === "auth" && !s.is_system && s.has_api
  );
  const kept = choices.get(props.entity);
  const [op, setOp] = useState<Operation>(
    kept && props.ops.includes(kept.op) ? kept.op : props.ops[0],
  );
  // "" = guest, else an auth entity
  const [who, setWho] = useState(kept?.who ?? "");
  const [q, setQ] = useState(kept?.q ?? "");
  const [users, setUsers] = useState<RecordData[]>([]);
  const [userId, setUserId] = useState(kept?.userId ?? "");
  // Kept as each render sees it (an effect would run after a remount that
  // came first).
  choices.set(props.entity, { op, who, q, userId });
  const [usersError, setUsersError] = useState("");
  const [result, setResult] = useState<TrialResult | null>(null);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (who === "") return setUsers([]);
    const t = setTimeout(() => {
      findUsers(who, q).then((list) => {
        setUsers(list);
        setUsersError("");
        setUserId((cur) =>
          list.some((u) => u.id === cur) ? cur : list[0]?.id ?? ""
        );
      }).catch((e) => setUsersError((e as Error).message));
    }, 250);
    return () => clearTimeout(t);
  }, [who, q]);

  const run = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      const rule = props.rules[op];
      setResult(
        await mb.send<TrialResult>("POST", "/api/v1/sys/rules/test", {
          body: {
            entity: props.entity,
            op,
            rule: {
              mode: rule.mode,
              expr: rule.mode === "custom" ? rule.expr : "",
            },
            as: who === "" ? null : { entity: who, id: userId },
            limit: 20,
          },
        }),
      );
    } catch (err) {
      setResult(null);
      const msg = (err as Error).message;
      const bad = /^Cannot test rule: (.*) at \d+$/.exec(
        msg,
      );
      setError(
        bad
          ? `Cannot test: the ${op} rule above is not valid yet (${bad[1]}).`
          : msg,
      );
    } finally {
      setBusy(false);
    }
  };

  const write = op === "add" || op === "update";
  return (
    <section class="card test-as" aria-labelledby="test-as-title">
      <h2 id="test-as-title">Test as</h2>
      <p class="muted">
        Tries the rules as edited above (saved or not) on the newest records.
        Nothing is written.
      </p>
      <form class="form-grid" onSubmit={run}>
        <div class="field">
          <label class="field-label" for="test-as-op">Operation</label>
          <select
            id="test-as-op"
            value={op}
            onChange={(e) => setOp(e.currentTarget.value as Operation)}
          >
            {props.ops.map((o) => <option key={o} value={o}>{o}</option>)}
          </select>
        </div>
        <div class="field">
          <label class="field-label" for="test-as-caller">Caller</label>
          <select
            id="test-as-caller"
            value={who}
            onChange={(e) => setWho(e.currentTarget.value)}
          >
            <option value="">Guest (no login)</option>
            {authEntities.map((s) => (
              <option key={s.name} value={s.name}>User of {s.name}</option>
            ))}
          </select>
        </div>
        {who !== "" && (
          <>
            <div class="field">
              <label class="field-label" for="test-as-search">
                Search users by email
              </label>
              <input
                id="test-as-search"
                type="search"
                value={q}
                onInput={(e) => setQ(e.currentTarget.value)}
              />
            </div>
            <div class={`field ${usersError ? "invalid" : ""}`}>
              <label class="field-label" for="test-as-user">User</label>
              <select
                id="test-as-user"
                value={userId}
                onChange={(e) => setUserId(e.currentTarget.value)}
              >
                {users.length === 0 && <option value="">No users found</option>}
                {users.map((u) => (
                  <option key={u.id} value={u.id}>
                    {String(u.email ?? u.id)}
                  </option>
                ))}
              </select>
              {usersError && <small class="error-text">{usersError}</small>}
            </div>
          </>
        )}
        <div class="field test-as-run">
          <button
            type="submit"
            class="btn btn-primary"
            disabled={busy || (who !== "" && userId === "")}
          >
            {busy ? "Testing…" : "Run test"}
          </button>
        </div>
      </form>
      {write && (
        <p class="muted">
          For {op}, the rule sees each stored record as <code>record</code>,
          {" "}
          <code>req.body</code> is empty and <code>req.method</code> is{" "}
          <code>{op === "add" ? "POST" : "PATCH"}</code>.
        </p>
      )}
      {error && <p class="error-box" role="alert">{error}</p>}
      {result && (
        <TrialTable
          op={op}
          result={result}
          email={String(users.find((u) => u.id === result.as.id)?.email ?? "")}
        />
      )}
    </section>
  );
}

function TrialTable(
  props: { op: Operation; result: TrialResult; email: string },
): JSX.Element {
  const { result, op } = props;
  const who = result.as.type === "guest"
    ? "a guest"
    : `${props.email || result.as.id} (${result.as.entity})`;
  const allowed = result.items.filter((i) => i.allowed).length;
  return (
    <div class="stack" aria-live="polite">
      <p>
        <strong>{allowed} of {result.items.length}</strong> records: {who} may
        {" "}
        {OP_WORDS[op]} them.
        {result.compiled && (
          <>
            {" "}Applied {result.compiled === "sql" ? "in SQL" : "row by row"}.
          </>
        )}
      </p>
      {result.denied && <p class="notice">{result.denied}</p>}
      {result.items.length === 0
        ? <p class="muted">This entity has no records yet.</p>
        : (
          <div
            class="table-wrap"
            tabIndex={0}
            role="region"
            aria-label="Test results per record"
          >
            <table class="data trial-table">
              <caption class="sr-only">Test results per record</caption>
              <thead>
                <tr>
                  <th scope="col">Record</th>
                  <th scope="col">Result</th>
                  <th scope="col">Note</th>
                </tr>
              </thead>
              <tbody>
                {result.items.map((i) => (
                  <tr key={i.id} class={i.allowed ? "ok" : "denied"}>
                    <td>
                      <span class="trial-label">{i.label || "—"}</span>{" "}
                      <code class="muted" title={i.id}>{i.id.slice(-12)}</code>
                    </td>
                    <td>
                      {i.allowed
                        ? <span class="trial-ok">✓ Allowed</span>
                        : <span class="trial-no">✗ Denied</span>}
                    </td>
                    <td class="trial-note">
                      {i.allowed
                        ? ""
                        : i.status
                        ? `The API answers ${i.status}`
                        : "Absent from the list"}
                      {i.error && i.error !== result.denied && (
                        <span class="error-text">: {i.error}</span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
    </div>
  );
}
