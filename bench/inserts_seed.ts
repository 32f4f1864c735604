/**
 * The chat of the insert benchmark (bench/inserts.ts), shaped after
 * TrailBase's (its `message`, `room` and `room_members` tables and the
 * create rule of its `message_api`): a `users` auth entity, `rooms`,
 * `room_members` (a user in a room) and `messages` (`owner`, `room`,
 * `text`, with Moonbase's `created`). A user may add a message of their
 * own to a room they are a member of:
 * `record.owner == auth.id && record.room.room_members_via_room.some(…)`,
 * the owner filled in from the token (`"default": "@auth"`).
 *
 * @module
 */

import { createApp } from "../mod.ts";
import type { AppConfig } from "../lib/config.ts";

/** The entity the benchmark fills. */
export const MESSAGES = "messages";

/** The add rule of `messages`: one's own message, in a room one is in. */
export const ADD_RULE =
  "record.owner == auth.id && record.room.room_members_via_room.some(m => m.user == auth.id)";

/** The text of the one message each run sends before its timed inserts. */
export const WARM_UP = "warm-up";

/** Who writes, and where. */
export interface Chat {
  email: string;
  password: string;
  userId: string;
  roomId: string;
}

/** Creates the entities, one user, one room and the user's membership. */
export async function seedChat(config: AppConfig): Promise<Chat> {
  const app = await createApp({ ...config, quiet: true });
  try {
    const users = await app.schemas.create({
      name: "users",
      type: "auth",
      fields: [],
      rules: {},
    });
    const rooms = await app.schemas.create({
      name: "rooms",
      type: "base",
      fields: [{ name: "name", type: "string" }],
      rules: {},
    });
    const members = await app.schemas.create({
      name: "room_members",
      type: "base",
      fields: [
        { name: "user", type: "relation", foreign_key: { entity: "users" } },
        { name: "room", type: "relation", foreign_key: { entity: "rooms" } },
      ],
      rules: {},
    });
    await app.schemas.create({
      name: MESSAGES,
      type: "base",
      fields: [
        {
          name: "owner",
          type: "relation",
          foreign_key: { entity: "users" },
          default: "@auth",
        },
        { name: "room", type: "relation", foreign_key: { entity: "rooms" } },
        { name: "text", type: "text" },
      ],
      rules: { add: { mode: "custom", expr: ADD_RULE } },
    });
    const email = "chat@example.com", password = "chat-password-1";
    const user = await users.create({ email, password });
    const room = await rooms.create({ name: "room0" });
    await members.create({ user: user.id, room: room.id });
    return {
      email,
      password,
      userId: String(user.id),
      roomId: String(room.id),
    };
  } finally {
    await app.close();
  }
}
