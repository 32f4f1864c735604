/**
 * The public `App` of mod.ts (docs/guide/embedding.md): `createApp` returns
 * only the documented members, apart from the core; `app.schemas` is the
 * older name of `app.entities`; the internals are reached only through
 * `internalApp` (lib/internal_app.ts), and only for an app `createApp` made.
 *
 * @module
 */

import assert from "node:assert/strict";
import { createApp, Entity } from "../mod.ts";
import { internalApp } from "../lib/internal_app.ts";

Deno.test({
  name: "app: createApp returns the public App, apart from the internals",
  // Closing the app leaves nothing running.
  sanitizeOps: true,
  sanitizeResources: true,
}, async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "mb_app_public_" });
  const app = await createApp({ dataDir, quiet: true });
  try {
    assert.deepEqual(Object.keys(app).sort(), [
      "close",
      "entities",
      "handler",
      "log",
      "route",
      "schemas",
      "serve",
      "stop",
    ]);
    assert.ok(Object.isFrozen(app));
    for (const internal of ["storage", "sessions", "config", "realtime"]) {
      assert.ok(!(internal in app), `${internal} is not public`);
    }
    assert.equal(app.schemas, app.entities, "schemas: the older name");

    const posts = await app.entities.create({
      name: "posts",
      type: "base",
      fields: [{ name: "title", type: "string" }],
    });
    assert.ok(posts instanceof Entity);
    assert.equal(app.entities.get("posts"), posts);
    assert.equal(app.entities.get(posts.id), posts);
    assert.ok(app.entities.all().some((e) => e.name === "posts"));
    const changed = await app.entities.update("posts", {
      fields: [...posts.fields, { name: "body", type: "text" }],
    });
    assert.ok(changed.hasField("body"));
    await app.entities.remove("posts");
    assert.equal(app.entities.get("posts"), undefined);

    app.route("GET", "/api/hello/:name", (ctx) => {
      return new Response(`hi ${ctx.params.name}`);
    });
    const res = await app.handler(new Request("http://localhost/api/hello/x"));
    assert.equal(await res.text(), "hi x");

    const internal = internalApp(app);
    assert.notEqual(internal, app);
    assert.equal(
      internal.schemas.get("mb_admins"),
      app.entities.get("mb_admins"),
    );
    assert.throws(() => internalApp({}), /^Error: Cannot reach the internals/);
  } finally {
    await app.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
