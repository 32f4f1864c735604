/**
 * Backups attacked with crafted archives (lib/backup): an archive an admin
 * uploads or copies in is held to what the schema API would accept, and
 * never makes the server read more into memory than a bounded entry.
 */
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import { readTar, tarHeader, TarWriter } from "../lib/backup/tar.ts";
import { createHash } from "node:crypto";

type Entry = [name: string, bytes: Uint8Array];
const enc = new TextEncoder(), dec = new TextDecoder();

async function unpack(bytes: Uint8Array): Promise<Entry[]> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream()
    .pipeThrough(
      new DecompressionStream("gzip") as unknown as TransformStream<
        Uint8Array,
        Uint8Array
      >,
    );
  const out: Entry[] = [];
  for await (const e of readTar(stream)) {
    out.push([e.name, await e.bytes(Infinity)]);
  }
  return out;
}

/** Packs `entries` (no manifest) with a manifest whose checksums and counts match. */
async function pack(
  entries: Entry[],
  manifest: Record<string, unknown>,
): Promise<Uint8Array> {
  const tar = new TarWriter(Date.now());
  const gz = tar.stream.pipeThrough(
    new CompressionStream("gzip") as unknown as TransformStream<
      Uint8Array,
      Uint8Array
    >,
  );
  const done = new Response(gz).arrayBuffer();
  const checksums: Record<string, string> = {};
  const tables: Record<string, number> = {};
  for (const [name, bytes] of entries) {
    checksums[name] = createHash("sha256").update(bytes).digest("hex");
    const t = /^tables\/([^/]+)\//.exec(name)?.[1];
    if (t) {
      tables[t] = (tables[t] ?? 0) +
        dec.decode(bytes).split("\n").filter((l) => l !== "").length;
    }
    await tar.add(name, bytes);
  }
  await tar.add(
    "manifest.json",
    enc.encode(JSON.stringify({ ...manifest, checksums, tables })),
  );
  await tar.close();
  return new Uint8Array(await done);
}

async function backupOf(s: TestServer, token: string): Promise<Entry[]> {
  const made = await s.request("POST", "/api/v1/sys/backups", {
    token,
    body: { name: `b${crypto.randomUUID().slice(0, 8)}` },
  });
  assertStatus(made, 201);
  return await unpack(
    await Deno.readFile(`${s.dataDir}/backups/${made.data.name}`),
  );
}

/** The archive `entries` again, with one more schema row in mb_tables. */
async function withSchema(
  entries: Entry[],
  schema?: Record<string, unknown>,
): Promise<Uint8Array> {
  const manifest = JSON.parse(
    dec.decode(entries.find(([n]) => n === "manifest.json")![1]),
  );
  const out = entries.filter(([n]) => n !== "manifest.json").map((
    [n, b],
  ): Entry => {
    if (!schema || n !== "tables/mb_tables/000001.jsonl") return [n, b];
    const row = {
      id: schema.id,
      name: schema.name,
      lname: String(schema.name).toLowerCase(),
      type: schema.type,
      schema: JSON.stringify(schema),
      created: "2026-01-01T00:00:00.000Z",
      updated: "2026-01-01T00:00:00.000Z",
    };
    return [n, enc.encode(dec.decode(b) + JSON.stringify(row) + "\n")];
  });
  return await pack(out, manifest);
}

async function restoreBytes(s: TestServer, token: string, bytes: Uint8Array) {
  const name = `x${crypto.randomUUID().slice(0, 8)}.tar.gz`;
  await Deno.writeFile(`${s.dataDir}/backups/${name}`, bytes);
  return await s.request("POST", `/api/v1/sys/backups/${name}/restore`, {
    token,
  });
}

const PUBLIC = { mode: "public", expr: "" };
const RULES = {
  list: PUBLIC,
  get: PUBLIC,
  add: PUBLIC,
  update: PUBLIC,
  delete: PUBLIC,
};
const T0 = "2026-01-01T00:00:00.000Z";

/** A stored schema as an archive's mb_tables holds one, with `extra` over it. */
function crafted(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    id: "0190aaaa-0000-7000-8000-000000000002",
    name: "crafted",
    type: "base",
    fields: [],
    view_query: "",
    rules: RULES,
    has_api: true,
    is_system: false,
    created: T0,
    updated: T0,
    ...extra,
  };
}

/** Schemas the schema API refuses, and the refusal a restore must give. */
const REFUSED: [string, Record<string, unknown>, RegExp][] = [
  [
    "a view reading the admins' password hashes",
    crafted({
      type: "view",
      view_query: 'SELECT "id", "email", "password" FROM "mb_admins"',
    }),
    /view crafted: .*system entity mb_admins/,
  ],
  [
    "a view reading an auth entity's password hashes",
    crafted({
      type: "view",
      view_query: 'SELECT "id", "password" FROM "members"',
    }),
    /view crafted: .*auth entity members/,
  ],
  [
    "a view calling a function (PostgreSQL: reads the server's files)",
    crafted({
      type: "view",
      view_query:
        "SELECT 1 AS x FROM generate_series(1, length(pg_read_file('/etc/hostname')))",
    }),
    /view crafted: Cannot accept view_query/,
  ],
  [
    "a reserved name",
    crafted({ name: "mb_crafted" }),
    /mb_ prefix is reserved/,
  ],
  [
    "a system entity (its users would be admins)",
    crafted({ type: "auth", is_system: true }),
    /marked as a system entity/,
  ],
  [
    "no fields",
    crafted({ fields: undefined }),
    /fields is required/,
  ],
  [
    "an unknown field type",
    crafted({ fields: [{ id: "0a1b2c3d4e5f6071", name: "x", type: "nope" }] }),
    /field "x"\.type "nope"/,
  ],
  [
    "a field named like a column no identifier holds",
    crafted({
      fields: [{ id: "0a1b2c3d4e5f6071", name: 'x" TEXT, "y', type: "string" }],
    }),
    /Cannot accept field name/,
  ],
  [
    "a rule that does not parse",
    crafted({ rules: { ...RULES, list: { mode: "custom", expr: "((" } } }),
    /rules\.list\.expr/,
  ],
  [
    "a relation to no entity of the backup",
    crafted({
      fields: [{
        id: "0a1b2c3d4e5f6071",
        name: "r",
        type: "relation",
        foreign_key: { entity: "mb_admins", on_delete: "cascade" },
      }],
    }),
    /foreign_key\.entity/,
  ],
  [
    "a field id that is not an id",
    crafted({ fields: [{ id: "../x", name: "x", type: "string" }] }),
    /field x of entity "crafted" has no valid id/,
  ],
  [
    "two entities of one name",
    crafted({ name: "Notes" }),
    /two entities are named Notes/,
  ],
];

forEachDb(
  "backups: a restore holds an archive's schemas to the schema API's checks",
  async (t, db) => {
    const s = await startServer(db);
    try {
      const token = await s.adminToken();
      const bodies = [
        {
          name: "members",
          type: "auth",
          fields: [{ name: "nick", type: "string" }],
          auth: {
            oauth2: {
              enabled: true,
              providers: [{
                name: "google",
                display_name: "Google",
                preset: "google",
                client_id: "client-1",
                client_secret: "google-secret-1",
                scopes: ["openid", "email"],
              }],
            },
          },
          rules: {
            ...RULES,
            list: { mode: "custom", expr: "auth.id == record.id" },
          },
        },
        {
          name: "notes",
          type: "base",
          fields: [
            { name: "body", type: "string", pattern: "^[a-z ]*$" },
            { name: "n", type: "int", min: 0 },
            { name: "state", type: "select", values: ["a", "b"] },
            {
              name: "owner",
              type: "relation",
              foreign_key: { entity: "members", on_delete: "cascade" },
              default: "@auth",
            },
          ],
          indexes: [{ fields: ["state", "n"], unique: false }],
        },
        {
          name: "note_bodies",
          type: "view",
          view_query: 'SELECT "id", "body", "n" FROM "notes"',
        },
      ];
      for (const body of bodies) {
        assertStatus(
          await s.request("POST", "/api/v1/schemas", { token, body }),
          201,
          body.name,
        );
      }
      const schemas = async () =>
        (await s.request("GET", "/api/v1/schemas", {
          token: await s.adminToken(),
        })).data;
      const before = await schemas();
      const entries = await backupOf(s, token);

      await t.step(
        "a backup made by the server restores as it was",
        async () => {
          const r = await restoreBytes(s, token, await withSchema(entries));
          assertStatus(r, 200);
          assertEquals(await schemas(), before);
        },
      );
      await t.step(
        "an entry claiming gigabytes is refused before anything is allocated",
        async () => {
          // A header saying 2 GiB, followed by a few bytes: a small upload.
          const head = tarHeader({
            name: "moonbase-backup.json",
            size: 2 ** 31,
          }, Date.now());
          const raw = new Uint8Array(head.length + 1024);
          raw.set(head);
          const gz = new Uint8Array(
            await new Response(
              new Blob([raw]).stream().pipeThrough(
                new CompressionStream("gzip") as unknown as TransformStream<
                  Uint8Array,
                  Uint8Array
                >,
              ),
            ).arrayBuffer(),
          );
          const r = await restoreBytes(s, token, gz);
          assertStatus(r, 400);
          assert(/larger than 65536 bytes/.test(r.error), r.error);
          assertEquals(await schemas(), before);
        },
      );
      for (const [what, schema, message] of REFUSED) {
        await t.step(`${what}: 400, nothing replaced`, async () => {
          const r = await restoreBytes(
            s,
            await s.adminToken(),
            await withSchema(entries, schema),
          );
          assertStatus(r, 400, what);
          assert(message.test(r.error), `${what}: ${r.error}`);
          assertEquals(await schemas(), before);
          const counts = await s.request("GET", "/api/v1/sys/counts", {
            token: await s.adminToken(),
          });
          assertEquals(
            Object.keys(counts.data).sort(),
            ["mb_admins", "members", "note_bodies", "notes"],
          );
        });
      }
    } finally {
      await s.close();
    }
  },
);
