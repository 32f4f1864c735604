/**
 * The insert benchmark (bench/inserts.ts) on SQLite with a small n: its
 * chat's add rule refuses what TrailBase's refuses, and a run through the
 * client and through the bare handler stores every message it sends. No
 * timing is checked.
 */

import {
  assert,
  assertEquals,
  assertStatus,
  startServer,
  TEST_JWT_SECRET,
} from "./_server.ts";
import { seedChat } from "../bench/inserts_seed.ts";
import { benchInserts } from "../bench/inserts_run.ts";

Deno.test("bench inserts: the chat's add rule, then a small run stores every message", async (t) => {
  await t.step(
    "a member adds to their room, not to another; a guest not at all",
    async () => {
      const dataDir = await Deno.makeTempDir({ prefix: "mb_test_" });
      const chat = await seedChat({ dataDir, jwtSecret: TEST_JWT_SECRET });
      const s = await startServer("sqlite", { dataDir });
      try {
        const login = await s.request("POST", "/api/v1/auth/users/login", {
          body: { identity: chat.email, password: chat.password },
        });
        assertStatus(login, 200);
        const token = (login.data as { token: string }).token;
        const mine = await s.request("POST", "/api/v1/entities/messages", {
          token,
          body: { room: chat.roomId, text: "hello" },
        });
        assertStatus(mine, 201);
        assertEquals((mine.data as { owner: string }).owner, chat.userId);
        const other = await s.app.schemas.get("rooms")!.create({
          name: "other",
        });
        const elsewhere = await s.request("POST", "/api/v1/entities/messages", {
          token,
          body: { room: other.id, text: "not a member" },
        });
        assertStatus(elsewhere, 403);
        const someone = await s.app.schemas.get("users")!.create({
          email: "someone@example.com",
          password: "someone-password-1",
        });
        const forged = await s.request("POST", "/api/v1/entities/messages", {
          token,
          body: { room: chat.roomId, text: "as someone", owner: someone.id },
        });
        assertStatus(forged, 403);
        const guest = await s.request("POST", "/api/v1/entities/messages", {
          body: { room: chat.roomId, text: "who" },
        });
        assertStatus(guest, 401);
      } finally {
        await s.close();
      }
    },
  );

  await t.step(
    "500 inserts at 64 in flight, through the client and bare",
    async () => {
      const r = await benchInserts({
        db: "sqlite",
        n: 500,
        concurrency: 64,
        log: () => {},
      });
      for (
        const [name, f] of Object.entries({
          moonbase: r.moonbase,
          bare: r.bare,
        })
      ) {
        assertEquals(f.errors, 0, `${name}: ${f.firstError}`);
        assertEquals(f.stored, 500, `${name}: messages stored`);
        assert(
          f.ms > 0 && f.p50 <= f.p90 && f.p90 <= f.p99,
          `${name}: figures`,
        );
      }
    },
  );
});
