/**
 * The types of the example app's entities, in the shape `moonbase types`
 * writes (`<Entity>Record`, `<Entity>Create`, `<Entity>Update` and the map
 * `Schema`). Written by hand here for the entities `app.ts` creates; an app
 * of your own generates this file from its server.
 *
 * @module
 */

/** A user (auth entity `users`). */
export interface UsersRecord {
  id: string;
  created: string;
  updated: string;
  email: string;
  verified: boolean;
  name: string | null;
}

/** What a sign-up takes. */
export interface UsersCreate {
  email: string;
  password: string;
  name?: string | null;
}

/** What an update of a user takes. */
export interface UsersUpdate {
  email?: string;
  password?: string;
  oldPassword?: string;
  name?: string | null;
}

/** A post (base entity `posts`). */
export interface PostsRecord {
  id: string;
  created: string;
  updated: string;
  title: string;
  body: string | null;
  status: "draft" | "published";
  views: number | null;
  /** The id of a `users` record. */
  author: string | null;
  expand?: { author?: UsersRecord };
}

/** What a create of a post takes. */
export interface PostsCreate {
  title: string;
  body?: string | null;
  status?: "draft" | "published";
  views?: number | null;
  author?: string | null;
}

/** What an update of a post takes. */
export interface PostsUpdate {
  title?: string;
  body?: string | null;
  status?: "draft" | "published";
  views?: number | null;
  author?: string | null;
}

/** Entity name → its types. */
export type Schema = {
  users: { record: UsersRecord; create: UsersCreate; update: UsersUpdate };
  posts: { record: PostsRecord; create: PostsCreate; update: PostsUpdate };
};

/** The schemas of these entities, as an admin creates them (`mb.schemas.create`). */
export const ENTITIES: Record<string, unknown>[] = [
  {
    name: "users",
    type: "auth",
    fields: [{ name: "name", type: "string" }],
    rules: {
      add: { mode: "public", expr: "" },
      list: { mode: "auth", expr: "" },
      get: { mode: "auth", expr: "" },
      update: { mode: "custom", expr: "record.id == auth.id" },
    },
  },
  {
    name: "posts",
    type: "base",
    fields: [
      { name: "title", type: "string", required: true },
      { name: "body", type: "text" },
      {
        name: "status",
        type: "select",
        values: ["draft", "published"],
        default: "draft",
      },
      { name: "views", type: "int" },
      {
        name: "author",
        type: "relation",
        foreign_key: { entity: "users", on_delete: "set null" },
        default: "@auth",
      },
    ],
    rules: {
      list: { mode: "public", expr: "" },
      get: { mode: "public", expr: "" },
      add: { mode: "auth", expr: "" },
      update: { mode: "custom", expr: "record.author == auth.id" },
      delete: { mode: "custom", expr: "record.author == auth.id" },
    },
  },
];
