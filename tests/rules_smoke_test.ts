import {
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
} from "./_server.ts";
forEachDb("rules smoke", async (_t, db) => {
  const s = await startServer(db, { trustProxy: true });
  try {
    const admin = await s.adminToken();
    let r = await s.request("POST", "/api/v1/schemas", {
      token: admin,
      body: {
        name: "users",
        type: "auth",
        fields: [],
        rules: { add: { mode: "public", expr: "" } },
      },
    });
    assertStatus(r, 201);
    r = await s.request("POST", "/api/v1/schemas", {
      token: admin,
      body: {
        name: "notes",
        type: "base",
        fields: [{ name: "owner", type: "string" }, {
          name: "body",
          type: "string",
        }, { name: "n", type: "int" }],
        rules: {
          list: { mode: "custom", expr: "record.owner == auth.id" },
          get: { mode: "custom", expr: "record.owner == auth.id" },
          add: {
            mode: "custom",
            expr: "auth.id != '' && record.owner == auth.id",
          },
          update: { mode: "custom", expr: "record.owner == auth.id" },
          delete: { mode: "custom", expr: "auth.type == 'user'" },
        },
      },
    });
    assertStatus(r, 201);
    r = await s.request("POST", "/api/v1/schemas", {
      token: admin,
      body: {
        name: "bad",
        type: "base",
        rules: { list: { mode: "custom", expr: "record.owner = 1" } },
      },
    });
    assertStatus(r, 400);
    const toks: string[] = [], ids: string[] = [];
    for (const e of ["a@x.io", "b@x.io"]) {
      r = await s.request("POST", "/api/v1/entities/users", {
        body: { email: e, password: "password1" },
      });
      ids.push(r.data.id);
      r = await s.request("POST", "/api/v1/auth/users/login", {
        body: { identity: e, password: "password1" },
        headers: { "x-forwarded-for": e },
      });
      toks.push(r.data.token);
    }
    r = await s.request("POST", "/api/v1/entities/notes", {
      token: toks[0],
      body: { owner: ids[0], body: "mine", n: 1 },
    });
    assertStatus(r, 201);
    const note = r.data.id;
    r = await s.request("POST", "/api/v1/entities/notes", {
      token: toks[0],
      body: { owner: ids[1], body: "forged" },
    });
    assertStatus(r, 403);
    r = await s.request("POST", "/api/v1/entities/notes", {
      body: { owner: "", body: "guest" },
    });
    assertStatus(r, 401);
    r = await s.request("POST", "/api/v1/entities/notes", {
      token: toks[1],
      body: { owner: ids[1], body: "b's", n: 2 },
    });
    assertStatus(r, 201);
    r = await s.request("GET", "/api/v1/entities/notes?count=true", {
      token: toks[0],
    });
    assertEquals(r.data.items.map((x: { body: string }) => x.body), ["mine"]);
    assertEquals(r.data.total, 1);
    r = await s.request("GET", `/api/v1/entities/notes/${note}`, {
      token: toks[1],
    });
    assertStatus(r, 404);
    r = await s.request("PATCH", `/api/v1/entities/notes/${note}`, {
      token: toks[0],
      body: { owner: ids[1] },
    });
    assertStatus(r, 403);
    r = await s.request(
      "GET",
      `/api/v1/entities/notes?filter=${
        encodeURIComponent("n >= 1 && body.startsWith('mi')")
      }`,
      { token: admin },
    );
    assertEquals(r.data.items.map((x: { body: string }) => x.body), ["mine"]);
    r = await s.request(
      "GET",
      `/api/v1/entities/notes?filter=${encodeURIComponent("nope == 1")}`,
      { token: admin },
    );
    assertStatus(r, 400);
    r = await s.request("DELETE", `/api/v1/entities/notes/${note}`);
    assertStatus(r, 401);
  } finally {
    await s.close();
  }
});
