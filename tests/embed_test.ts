/**
 * Moonbase embedded by a program outside the checkout: a temp directory
 * holding its own tiny program imports `mod.ts` by path, creates an app on a
 * temp dataDir, serves on port 0, reads health and the dashboard, and closes.
 * Run as a real embedder would: with no deno.json at all, and with a
 * deno.json of its own (importing Moonbase by a relative path). Nothing of
 * Moonbase's import map may be needed.
 *
 * @module
 */

import assert from "node:assert/strict";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { DATABASES } from "./_server.ts";
import { startPostgres } from "./_pg.ts";

const CHECKOUT = fileURLToPath(new URL("..", import.meta.url));
const MOD_URL = new URL("../mod.ts", import.meta.url).href;

/** The embedding program; `SPEC` is replaced with the import specifier. */
const PROGRAM = `
import { createApp } from "SPEC";

const dataDir = await Deno.makeTempDir({ prefix: "mb_embed_data_" });
const connection = Deno.env.get("EMBED_PG");
const app = await createApp({
  dataDir,
  quiet: true,
  jwtSecret: "embed-secret-0123456789-abcdefghijklmnop",
  ...(connection ? { database: "PSQL", connection } : {}),
});
await app.schemas.get("mb_admins")!.create({
  email: "embed@example.com",
  password: "embed-password",
});
const server = await app.serve({ port: 0, hostname: "127.0.0.1" });
const base = "http://127.0.0.1:" + server.addr.port;
const health = await (await fetch(base + "/api/v1/health")).json();
const mb = await fetch(base + "/mb");
const page = await mb.text();
const login = await (await fetch(base + "/api/v1/sys/admins/login", {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ identity: "embed@example.com", password: "embed-password" }),
})).json();
await app.log.flush();
const logs = await (await fetch(base + "/api/v1/sys/logs?type=request", {
  headers: { authorization: "Bearer " + login.data.token },
})).json();
console.log(JSON.stringify({
  health: health.status,
  status: health.data.status,
  version: health.data.version,
  dashboard: mb.status,
  html: /<html/i.test(page),
  login: login.status,
  logged: logs.status === 200 && logs.data.items.length >= 2,
}));
await app.stop(server);
await Deno.remove(dataDir, { recursive: true });
`;

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function runIn(dir: string, env: Record<string, string>): Promise<
  Outcome
> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts"],
    cwd: dir,
    env: { ...env, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
    // A hang fails the test instead of holding the suite.
    signal: AbortSignal.timeout(120_000),
  }).output();
  const dec = new TextDecoder();
  return {
    code: out.code,
    stdout: dec.decode(out.stdout),
    stderr: dec.decode(out.stderr),
  };
}

function check(o: Outcome, version: string): void {
  assert.equal(o.code, 0, `embedding program failed:\n${o.stderr}`);
  const line = o.stdout.trim().split("\n").at(-1) ?? "";
  assert.deepEqual(JSON.parse(line), {
    health: 200,
    status: "ok",
    version,
    dashboard: 200,
    html: true,
    login: 200,
    logged: true,
  });
  assert.equal(o.stderr.trim(), "", "nothing on stderr");
}

const VERSION =
  JSON.parse(await Deno.readTextFile(`${CHECKOUT}/deno.json`)).version;

for (const db of DATABASES) {
  Deno.test({
    name: `embed: mod.ts imported by path from another directory [${db}]`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async (t) => {
      // Each run gets a fresh database.
      const envFor = async (): Promise<Record<string, string>> =>
        db === "postgres"
          ? { EMBED_PG: await (await startPostgres()).createDatabase() }
          : {};
      const root = await Deno.makeTempDir({ prefix: "mb_embed_" });
      try {
        // Both programs (and the type check) run at once; each step checks
        // what one of them did.
        const bare = `${root}/bare`;
        await Deno.mkdir(bare);
        await Deno.writeTextFile(
          `${bare}/main.ts`,
          PROGRAM.replace("SPEC", MOD_URL),
        );
        const project = `${root}/project`;
        await Deno.mkdir(project);
        await Deno.writeTextFile(
          `${project}/deno.json`,
          JSON.stringify({
            imports: { "app/": "./" },
            compilerOptions: { strict: true },
          }),
        );
        const rel = relative(project, `${CHECKOUT}/mod.ts`);
        await Deno.writeTextFile(
          `${project}/main.ts`,
          PROGRAM.replace("SPEC", rel.startsWith(".") ? rel : `./${rel}`),
        );
        // An embedder type-checks their program with their own config
        // (once: it does not depend on the database).
        const checking = db === DATABASES[0]
          ? new Deno.Command(Deno.execPath(), {
            args: ["check", "main.ts"],
            cwd: project,
            env: { NO_COLOR: "1" },
            stdout: "piped",
            stderr: "piped",
            signal: AbortSignal.timeout(120_000),
          }).output()
          : undefined;
        // Awaited in the step below; not left unhandled if a run fails first.
        checking?.catch(() => {});
        const [ranBare, ranProject] = await Promise.all([
          envFor().then((env) => runIn(bare, env)),
          envFor().then((env) => runIn(project, env)),
        ]);
        await t.step("no deno.json, absolute file URL", () => {
          check(ranBare, VERSION);
        });
        await t.step("own deno.json, relative path", async () => {
          check(ranProject, VERSION);
          if (!checking) return;
          const checked = await checking;
          assert.equal(
            checked.code,
            0,
            new TextDecoder().decode(checked.stderr),
          );
        });
      } finally {
        await Deno.remove(root, { recursive: true });
      }
    },
  });
}

Deno.test({
  name: "embed: an embedder's own top-level error ends its program",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "mb_embed_err_" });
    try {
      await Deno.writeTextFile(
        `${dir}/main.ts`,
        `import { createApp } from "${MOD_URL}";
const app = await createApp({ dataDir: "${dir}/data", quiet: true });
await app.serve({ port: 0, hostname: "127.0.0.1" });
const admins = app.schemas.get("mb_admins")!;
await admins.create({ email: "twice@example.com", password: "password-123" });
await admins.create({ email: "twice@example.com", password: "password-123" });
`,
      );
      const o = await runIn(dir, {});
      assert.notEqual(o.code, 0, "the program must fail, not succeed");
      assert.match(o.stderr, /error/i);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("embed: product source imports no name of Moonbase's import map", async () => {
  const map = JSON.parse(await Deno.readTextFile(`${CHECKOUT}/deno.json`))
    .imports as Record<string, string>;
  const bare = Object.keys(map);
  const offenders: string[] = [];
  const scan = async (path: string) => {
    const text = await Deno.readTextFile(path);
    for (const [i, line] of text.split("\n").entries()) {
      if (/^\s*(\*|\/\/)/.test(line)) continue; // doc examples use the map
      for (const m of line.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
        const spec = m[1];
        if (
          bare.some((b) => b.endsWith("/") ? spec.startsWith(b) : spec === b)
        ) {
          offenders.push(`${relative(CHECKOUT, path)}:${i + 1} ${spec}`);
        }
      }
    }
  };
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(path);
      else if (/\.tsx?$/.test(e.name) && !/_test\.tsx?$/.test(e.name)) {
        await scan(path);
      }
    }
  };
  await walk(`${CHECKOUT}/lib`);
  await walk(`${CHECKOUT}/routes`);
  await scan(`${CHECKOUT}/mod.ts`);
  await scan(`${CHECKOUT}/main.ts`);
  assert.deepEqual(offenders, []);
});
