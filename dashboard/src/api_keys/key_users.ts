/// <reference lib="dom" />
/**
 * Who an API key acts for: a user of an auth entity or an admin
 * (`mb_admins`). Finds a user by email or id for the new-key form, and the
 * emails of the keys' users for the list (admins read every record).
 *
 * @module
 */

import { mb, MoonbaseError, type RecordData } from "../mb.ts";

/** The entity of admin keys. */
export const ADMINS = "mb_admins";

/** An entity's users (admins through their own routes). */
function usersOf(entity: string): {
  list(query: { filter: string; limit: number }): Promise<{
    items: RecordData[];
  }>;
  get(id: string, signal?: AbortSignal): Promise<RecordData>;
} {
  if (entity === ADMINS) {
    return { list: (q) => mb.admins.list(q), get: (id) => mb.admins.get(id) };
  }
  const records = mb.entity(entity);
  return {
    list: (q) => records.list(q),
    get: (id, signal) => records.get(id, {}, { signal }),
  };
}

/**
 * The id of the user `who` (an email, or an id) of `entity`, or a message
 * saying none matched.
 */
export async function findUser(
  entity: string,
  who: string,
): Promise<{ id: string } | { error: string }> {
  const w = who.trim();
  if (w === "") return { error: "Required: the user's email or id." };
  if (w.includes("@")) {
    const page = await usersOf(entity).list({
      filter: `email == ${JSON.stringify(w.toLowerCase())}`,
      limit: 1,
    });
    const hit = page.items[0];
    return hit
      ? { id: hit.id }
      : { error: `No ${entity} user has the email ${w}.` };
  }
  try {
    await usersOf(entity).get(w);
    return { id: w };
  } catch (e) {
    if (e instanceof MoonbaseError && e.status === 404) {
      return { error: `No ${entity} user has the id ${w}.` };
    }
    throw e;
  }
}

/**
 * The emails of users by `entity/id` (at most 100 looked up; a user not
 * found is left out).
 */
export async function userEmails(
  users: { entity: string; user_id: string }[],
  signal?: AbortSignal,
): Promise<Record<string, string>> {
  const wanted = [...new Set(users.map((u) => `${u.entity}/${u.user_id}`))]
    .slice(0, 100);
  const out: Record<string, string> = {};
  await Promise.all(wanted.map(async (k) => {
    const at = k.indexOf("/");
    const [entity, id] = [k.slice(0, at), k.slice(at + 1)];
    try {
      const r = await usersOf(entity).get(id, signal);
      if (typeof r.email === "string") out[k] = r.email;
    } catch {
      // Gone or unreadable: the list shows the id instead.
    }
  }));
  return out;
}

/** The dashboard page of a key's user. */
export function userHref(entity: string, id: string): string {
  return entity === ADMINS
    ? "/mb/admins"
    : `/mb/entities/${encodeURIComponent(entity)}/records/${
      encodeURIComponent(id)
    }`;
}
