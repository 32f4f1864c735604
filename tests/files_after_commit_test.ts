/**
 * A write's uploads belong to its record once the write committed: a
 * failure of the work that follows the commit (here: removing the mailed
 * proofs of a user whose password changed, made to fail by dropping their
 * table) answers an error, but must not remove the files of the committed
 * record — on a single update and in a batch. Both databases.
 *
 * @module
 */

import { assert, assertStatus, forEachDb, startServer } from "./_server.ts";
import { CONFIG, file, getFile, PNG, sendForm } from "./_files_fixtures.ts";

forEachDb(
  "files: a failure after the commit keeps the record's files",
  async (t, db) => {
    const s = await startServer(db, CONFIG);
    try {
      const admin = await s.adminToken();
      assertStatus(
        await s.request("POST", "/api/v1/schemas", {
          token: admin,
          body: {
            name: "people",
            type: "auth",
            fields: [{ name: "avatar", type: "file" }],
          },
        }),
        201,
      );
      const made = async (email: string) => {
        const r = await s.request("POST", "/api/v1/entities/people", {
          token: admin,
          body: { email, password: "first-password" },
        });
        assertStatus(r, 201);
        return String(r.data.id);
      };
      const ada = await made("ada@example.com");
      const bob = await made("bob@example.com");
      // The work after a password change's commit now fails.
      await s.app.storage.run(`DROP TABLE "mb_otps"`);

      await t.step("a single update", async () => {
        const fd = new FormData();
        fd.append("password", "second-password");
        fd.append("avatar", file(PNG, "face.png", "image/png"));
        const r = await sendForm(
          s,
          "PATCH",
          `/api/v1/entities/people/${ada}`,
          fd,
          {
            token: admin,
          },
        );
        assert(
          r.status >= 400,
          `the failure is reported: ${r.status} ${r.text}`,
        );
        const rec = await s.request("GET", `/api/v1/entities/people/${ada}`, {
          token: admin,
        });
        assertStatus(rec, 200);
        const name = String(rec.data.avatar);
        assert(name.startsWith("face_"), `committed: ${name}`);
        const got = await getFile(s, `/api/files/people/${name}`, {
          token: admin,
        });
        assert(
          got.status === 200,
          `the committed record's file is still there: ${got.status}`,
        );
      });

      await t.step("a batch", async () => {
        const fd = new FormData();
        fd.append(
          "@json",
          JSON.stringify({
            requests: [{
              method: "PATCH",
              url: `/api/v1/entities/people/${bob}`,
              body: { password: "second-password" },
            }],
          }),
        );
        fd.append("requests.0.avatar", file(PNG, "bob.png", "image/png"));
        const r = await sendForm(s, "POST", "/api/v1/batch", fd, {
          token: admin,
        });
        assert(
          r.status >= 400,
          `the failure is reported: ${r.status} ${r.text}`,
        );
        const rec = await s.request("GET", `/api/v1/entities/people/${bob}`, {
          token: admin,
        });
        assertStatus(rec, 200);
        const name = String(rec.data.avatar);
        assert(name.startsWith("bob_"), `committed: ${name}`);
        const got = await getFile(s, `/api/files/people/${name}`, {
          token: admin,
        });
        assert(
          got.status === 200,
          `the committed record's file is still there: ${got.status}`,
        );
      });
    } finally {
      await s.close();
    }
  },
);
