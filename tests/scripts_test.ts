import {
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
} from "./_server.ts";

const SCRIPT = `
export const helpers = { isEven: (n) => typeof n === "number" && n % 2 === 0 };
export function setup(app) {
  app.route("GET", "/api/hello/:name", (ctx) => Response.json({ hello: ctx.params.name }));
}
`;

forEachDb("scripts: helpers in rules and custom routes", async (_t, db) => {
  const dir = await Deno.makeTempDir({ prefix: "mb_scripts_" });
  await Deno.writeTextFile(`${dir}/hello.js`, SCRIPT);
  const s = await startServer(db, { scriptsDir: dir });
  try {
    const token = await s.adminToken();
    let r = await s.request("GET", "/api/hello/ada");
    assertEquals(r.status, 200);
    assertEquals(JSON.parse(r.text), { hello: "ada" });
    r = await s.request("POST", "/api/v1/schemas", {
      token,
      body: {
        name: "nums",
        type: "base",
        fields: [{ name: "n", type: "int" }],
        rules: {
          list: { mode: "custom", expr: "isEven(record.n)" },
          add: { mode: "public", expr: "" },
        },
      },
    });
    assertStatus(r, 201);
    for (const n of [1, 2, 3, 4]) {
      assertStatus(
        await s.request("POST", "/api/v1/entities/nums", { body: { n } }),
        201,
      );
    }
    r = await s.request("GET", "/api/v1/entities/nums?count=true");
    assertStatus(r, 200);
    assertEquals(r.data.items.map((x: { n: number }) => x.n), [2, 4]);
    assertEquals(r.data.total, 2);
    r = await s.request("POST", "/api/v1/schemas", {
      token,
      body: {
        name: "bad",
        type: "base",
        rules: { list: { mode: "custom", expr: "nothere(1)" } },
      },
    });
    assertStatus(r, 400);
    assertEquals(r.error.includes("nothere"), true);
  } finally {
    await s.close();
    await Deno.remove(dir, { recursive: true });
  }
});
