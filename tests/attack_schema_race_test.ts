/**
 * Attack: a schema change racing a record write. A write resolves its
 * entity when its request arrives and reads its body after; a body that
 * takes its time (a slow client, a big upload) spans a schema change made
 * meanwhile. The write must then be decided by the schema in force when it
 * is stored: a rule tightened meanwhile refuses it, a field made required or
 * bounded meanwhile checks it (or the write asks for a retry, 409) — never
 * stored under the rules an admin has just replaced.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import { closeAll, connect, enc, portOf, readResponse } from "./_tcp.ts";
import { pause } from "./_wait.ts";

const PUBLIC = { mode: "public", expr: "" };
const ADMIN_ONLY = { mode: "", expr: "" };

async function makeNotes(s: TestServer, admin: string): Promise<void> {
  const r = await s.request("POST", "/api/v1/schemas", {
    token: admin,
    body: {
      name: "notes",
      type: "base",
      fields: [{ name: "title", type: "string" }],
      rules: { list: PUBLIC, get: PUBLIC, add: PUBLIC, update: PUBLIC },
    },
  });
  assertEquals(r.status, 201, r.text);
}

/**
 * Sends a request's head and the first half of its JSON body, then waits
 * for `meanwhile`, then the rest; returns the status and the response text.
 */
async function slowWrite(
  s: TestServer,
  method: string,
  path: string,
  body: unknown,
  meanwhile: () => Promise<void>,
): Promise<{ status: number; text: string }> {
  const json = JSON.stringify(body);
  const conn = await connect(portOf(s));
  try {
    await conn.write(enc.encode(
      `${method} ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${json.length}\r\nConnection: close\r\n\r\n` +
        json.slice(0, 5),
    ));
    // Let the server resolve the entity and start on the body.
    await pause(200);
    await meanwhile();
    await conn.write(enc.encode(json.slice(5)));
    const text = await readResponse(conn);
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
    return { status, text };
  } finally {
    closeAll([conn]);
  }
}

async function count(s: TestServer, admin: string): Promise<number> {
  const r = await s.request("GET", "/api/v1/entities/notes?limit=100", {
    token: admin,
  });
  assertEquals(r.status, 200, r.text);
  return (r.data.items as unknown[]).length;
}

forEachDb(
  "attack schema race: an add rule tightened while a create's body arrives refuses it",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      const admin = await s.adminToken();
      await makeNotes(s, admin);
      const got = await slowWrite(
        s,
        "POST",
        "/api/v1/entities/notes",
        { title: "spam" },
        async () => {
          const p = await s.request("PATCH", "/api/v1/schemas/notes", {
            token: admin,
            body: { rules: { add: ADMIN_ONLY } },
          });
          assertEquals(p.status, 200, p.text);
          // The rule is in force: a guest's create now is refused.
          const now = await s.request("POST", "/api/v1/entities/notes", {
            body: { title: "late" },
          });
          assertEquals(now.status, 401, now.text);
        },
      );
      assert(
        got.status === 401 || got.status === 409,
        `a guest's create stored under the replaced rule: ${got.text}`,
      );
      assertEquals(await count(s, admin), 0, "nothing stored");
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "attack schema race: an update rule tightened while a PATCH's body arrives refuses it",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      const admin = await s.adminToken();
      await makeNotes(s, admin);
      const made = await s.request("POST", "/api/v1/entities/notes", {
        body: { title: "kept" },
      });
      assertEquals(made.status, 201, made.text);
      const got = await slowWrite(
        s,
        "PATCH",
        `/api/v1/entities/notes/${made.data.id}`,
        { title: "defaced" },
        async () => {
          const p = await s.request("PATCH", "/api/v1/schemas/notes", {
            token: admin,
            body: { rules: { update: ADMIN_ONLY } },
          });
          assertEquals(p.status, 200, p.text);
        },
      );
      assert(
        got.status === 401 || got.status === 409,
        `a guest's update stored under the replaced rule: ${got.text}`,
      );
      const r = await s.request(
        "GET",
        `/api/v1/entities/notes/${made.data.id}`,
      );
      assertEquals(r.data.title, "kept");
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "attack schema race: a field bounded while a create's body arrives is checked",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      const admin = await s.adminToken();
      await makeNotes(s, admin);
      const schema = await s.request("GET", "/api/v1/schemas/notes", {
        token: admin,
      });
      const title = (schema.data.fields as { id: string; name: string }[])
        .find((f) => f.name === "title")!;
      const long = await slowWrite(
        s,
        "POST",
        "/api/v1/entities/notes",
        { title: "far too long" },
        async () => {
          const p = await s.request("PATCH", "/api/v1/schemas/notes", {
            token: admin,
            body: {
              fields: [{
                id: title.id,
                name: "title",
                type: "string",
                required: true,
                max: 3,
              }],
            },
          });
          assertEquals(p.status, 200, p.text);
        },
      );
      assert(
        long.status === 400 || long.status === 409,
        `a value over the new max stored: ${long.text}`,
      );
      const list = await s.request("GET", "/api/v1/entities/notes?limit=100");
      for (const it of list.data.items as { title: unknown }[]) {
        assert(
          typeof it.title === "string" && it.title.length <= 3,
          `stored against the schema in force: ${JSON.stringify(it)}`,
        );
      }
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "attack schema race: a schema PATCH on one instance right after another instance's change plans on the new schema",
  async (_t, db) => {
    const a = await startServer(db);
    const b = await startServer(db, {
      dataDir: a.dataDir,
      connection: a.connection,
    });
    try {
      // B learns of A's changes only when it checks (no poll meanwhile).
      b.app.sync.setPolling({ revocations: 0, schemas: 0 });
      const admin = await a.adminToken();
      const made = await a.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "shared",
          type: "base",
          fields: [{ name: "f0", type: "string" }],
        },
      });
      assertEquals(made.status, 201, made.text);
      const refused: string[] = [];
      let fields = made.data.fields as { id: string; name: string }[];
      for (let k = 1; k <= 5; k++) {
        const add = await a.request("PATCH", "/api/v1/schemas/shared", {
          token: admin,
          body: { fields: [...fields, { name: `f${k}`, type: "string" }] },
        });
        assertEquals(add.status, 200, add.text);
        fields = add.data.fields;
        const added = fields.find((f) => f.name === `f${k}`)!;
        // At once on B: the field A just added, by its id.
        const rename = await b.request("PATCH", "/api/v1/schemas/shared", {
          token: admin,
          body: {
            fields: fields.map((f) =>
              f.id === added.id ? { ...f, name: `g${k}` } : f
            ),
          },
        });
        if (rename.status !== 200) {
          refused.push(`${rename.status} ${rename.text}`);
          continue;
        }
        fields = rename.data.fields;
      }
      assert(
        refused.length === 0,
        `PATCHes planned on B's old schema:\n${refused.join("\n")}`,
      );
    } finally {
      await b.close();
      await a.close();
    }
  },
);
