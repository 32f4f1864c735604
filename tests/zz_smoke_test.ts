import assert from "node:assert/strict";
import { forEachDb, startServer } from "./_server.ts";
import { openSse } from "./_realtime_fixtures.ts";
forEachDb("smoke", async (_t, db) => {
  const s = await startServer(db);
  try {
    const admin = await s.adminToken();
    let r = await s.request("POST", "/api/v1/schemas", { token: admin, body: { name: "posts", type: "base", fields: [{ name: "title", type: "string" }], rules: { list: { mode: "public", expr: "" }, get: { mode: "public", expr: "" }, add: { mode: "public", expr: "" }, update: { mode: "public", expr: "" }, delete: { mode: "public", expr: "" } } } });
    console.log(r.status, r.error);
    const c = await openSse(s, "topics=posts");
    console.log(c.status, c.body);
    console.log(await c.next());
    r = await s.request("POST", "/api/v1/entities/posts", { body: { title: "hi" } });
    console.log(r.status, r.error);
    const m = await c.next();
    console.log(m);
    await s.request("PATCH", `/api/v1/entities/posts/${r.data.id}`, { body: { title: "ho" } });
    console.log(await c.next());
    await s.request("DELETE", `/api/v1/entities/posts/${r.data.id}`);
    const d = await c.next();
    console.log(d);
    c.close();
    const c2 = await openSse(s, "topics=posts", { headers: { "last-event-id": m!.id! } });
    console.log(await c2.next(), await c2.next(), await c2.next());
    c2.close();
  } finally { await s.close(); }
});
