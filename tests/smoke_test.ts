import {
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
} from "./_server.ts";

forEachDb("smoke: admin, entity, CRUD", async (_t, db) => {
  const s = await startServer(db);
  try {
    const token = await s.adminToken();
    let r = await s.request("POST", "/api/v1/schemas", {
      token,
      body: {
        name: "posts",
        type: "base",
        fields: [{ name: "title", type: "string", required: true }, {
          name: "views",
          type: "int",
        }],
        rules: {
          list: { mode: "public", expr: "" },
          get: { mode: "public", expr: "" },
        },
      },
    });
    assertStatus(r, 201);
    r = await s.request("POST", "/api/v1/entities/posts", {
      token,
      body: { title: "a", views: 1 },
    });
    assertStatus(r, 201);
    const id = r.data.id;
    r = await s.request("PATCH", `/api/v1/entities/posts/${id}`, {
      token,
      body: { views: 2 },
    });
    assertStatus(r, 200);
    assertEquals(r.data.views, 2);
    r = await s.request("GET", `/api/v1/entities/posts?count=true`);
    assertStatus(r, 200);
    assertEquals(r.data.total, 1);
    r = await s.request("DELETE", `/api/v1/entities/posts/${id}`, { token });
    assertStatus(r, 204);
  } finally {
    await s.close();
  }
});
