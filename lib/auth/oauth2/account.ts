/**
 * The user an OAuth2 identity signs in as, in this order:
 *
 * 1. The user linked to the identity (`mb_oauth2_links`, by issuer and
 *    subject), whatever the emails are now.
 * 2. Else, when the provider says the email is verified, the user with that
 *    email: the identity is linked to it. A user who had not verified the
 *    address becomes verified, gets a new random password that ends
 *    their sessions, and loses the other identities linked to it: whoever
 *    registered the address before its owner signed in (with a password,
 *    or through a provider that does not verify emails) cannot keep a way
 *    in (account pre-hijacking).
 * 3. Else a new user, created as a guest through the record write path
 *    (the add rule, the sign-up limit, hooks and realtime all apply): the
 *    email, a random password (the user can set one by a password reset),
 *    `verified` as the provider says, and the name and avatar URL in the
 *    fields `auth.oauth2.fields` names. An add rule a guest does not pass
 *    answers 403.
 *
 * An email the provider has not verified never links to an existing user:
 * when a user has it, the sign-in is refused with 409 (as a sign-up with
 * that email would be); when none has, the new user is unverified.
 * A provider that gives no email at all is refused with 403.
 *
 * @module
 */

import { MoonbaseError } from "../../errors.ts";
import { GUEST } from "../../caller.ts";
import type { Storage } from "../../db/storage.ts";
import type { RecordData } from "../../records/codec.ts";
import type { Entity } from "../../records/entity.ts";
import {
  link,
  linkedUser,
  type LinkKey,
  touchLink,
  unlink,
  unlinkOthers,
} from "./links.ts";
import type { Identity, OAuth2Options } from "./types.ts";

/** The user of a sign-in, and whether it was created by it. */
export interface SignedIn {
  user: RecordData;
  isNew: boolean;
}

/** What choosing the user needs. */
export interface AccountContext {
  store: Storage;
  entity: Entity;
  provider: string;
  options: OAuth2Options;
  /** Unix seconds. */
  nowS: number;
}

function randomPassword(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replace(/[+/=]/g, "");
}

/** Finds, links or creates the user of `identity`. */
export async function signedInUser(
  identity: Identity,
  cx: AccountContext,
): Promise<SignedIn> {
  const { store, entity } = cx;
  const key: LinkKey = {
    entityId: entity.id,
    issuer: identity.issuer,
    subject: identity.subject,
  };
  const linked = await linkedUser(store, key);
  if (linked !== undefined) {
    const user = await entity.read(linked);
    if (user) {
      await touchLink(store, key, cx.nowS);
      return { user, isNew: false };
    }
    // The user was deleted: the identity is free again.
    await unlink(store, key);
  }
  if (identity.email === "") {
    throw new MoonbaseError(
      "forbidden",
      `Cannot log in with ${cx.provider}: the provider gave no email address; ask for its email scope (and, on GitHub, make an address public or grant user:email)`,
    );
  }
  if (identity.emailVerified) {
    const row = await entity.rowFromCols(identity.email, ["email"]);
    if (row) return { user: await adopt(row, key, cx), isNew: false };
  }
  return await createUser(identity, key, cx);
}

/** Links the identity to an existing user with its (verified) email. */
async function adopt(
  row: Record<string, unknown>,
  key: LinkKey,
  cx: AccountContext,
): Promise<RecordData> {
  const id = String(row.id);
  const winner = await link(cx.store, key, cx.provider, id, cx.nowS);
  if (winner === id && !isVerified(row.verified)) {
    await cx.entity.update(id, {
      verified: true,
      password: randomPassword(),
    });
    // An identity linked before (e.g. by an unverified email) was not the owner's.
    await unlinkOthers(cx.store, key, id);
  }
  const user = await cx.entity.read(winner);
  if (!user) throw raced(cx.provider);
  return user;
}

function isVerified(v: unknown): boolean {
  return v === true || v === 1 || v === "1";
}

function raced(provider: string): MoonbaseError {
  return new MoonbaseError(
    "conflict",
    `Cannot log in with ${provider}: the account changed during the sign-in; start the sign-in again`,
  );
}

/** The provider's name and avatar in the fields the options name. */
function mappedFields(
  identity: Identity,
  cx: AccountContext,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const put = (field: string | null, value: string, types: string[]) => {
    if (field === null || value === "") return;
    const f = cx.entity.schema.fields.find((f) =>
      !f.system && f.name === field
    );
    // A file field would need the image downloaded: not done (README).
    if (!f || !types.includes(f.type)) return;
    out[field] = typeof f.max === "number" && f.max > 0
      ? value.slice(0, f.max)
      : value;
  };
  put(cx.options.fields.name, identity.name, ["string", "text"]);
  put(cx.options.fields.avatar, identity.avatar, ["string", "url"]);
  return out;
}

async function createUser(
  identity: Identity,
  key: LinkKey,
  cx: AccountContext,
): Promise<SignedIn> {
  const data = {
    ...mappedFields(identity, cx),
    email: identity.email,
    password: randomPassword(),
  };
  let created: RecordData;
  try {
    created = await cx.entity.create(data, { as: GUEST });
  } catch (err) {
    if (!(err instanceof MoonbaseError)) throw err;
    if (err.code === "unauthenticated" || err.code === "forbidden") {
      throw new MoonbaseError(
        "forbidden",
        `Cannot log in with ${cx.provider}: no account has this identity${
          identity.emailVerified ? " or email" : ""
        }, and ${cx.entity.name} does not let guests sign up (its add rule)`,
      );
    }
    if (err.code === "conflict" && identity.emailVerified) {
      // A user with this email was created meanwhile: link to it.
      const row = await cx.entity.rowFromCols(identity.email, ["email"]);
      if (row) return { user: await adopt(row, key, cx), isNew: false };
    }
    if (err.code === "conflict") {
      throw new MoonbaseError(
        "conflict",
        `Cannot log in with ${cx.provider}: an account with this email exists and the provider has not verified the email, so it is not linked; log in to that account another way`,
      );
    }
    throw err;
  }
  const id = String(created.id);
  const winner = await link(cx.store, key, cx.provider, id, cx.nowS);
  if (winner !== id) {
    // Another sign-in of the same identity linked first: its user stands.
    const user = await cx.entity.read(winner);
    if (!user) throw raced(cx.provider);
    return { user, isNew: false };
  }
  if (identity.emailVerified) {
    const user = await cx.entity.update(id, { verified: true });
    if (!user) throw raced(cx.provider);
    return { user, isNew: true };
  }
  return { user: created, isNew: true };
}
