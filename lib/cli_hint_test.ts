/**
 * The commands hints print (the start banner's "create an admin" line) are
 * ones the user can run as written: the checkout's task, npx where Deno
 * came from npm and is not on PATH, never a path into npx's cache.
 */

import assert from "node:assert/strict";
import { commandFor, type Invocation } from "./cli_hint.ts";

const CHECKOUT: Invocation = {
  execPath: "/usr/bin/deno",
  mainModule: "file:///srv/moonbase/main.ts",
  cwd: "/srv/moonbase",
  which: (name) => name === "deno" ? "/usr/bin/deno" : undefined,
  hasTask: (dir) => dir === "/srv/moonbase",
  denoVersion: "2.9.6",
};
const NPX = "/root/.npm/_npx/0f1e/node_modules/@deno/linux-x64-glibc/deno";
const ARGS = "admins --add <email> <password>";

const CASES: [
  string,
  Invocation,
  { dataDir?: string; database?: string },
  string,
][] = [
  [
    "a checkout: the task",
    CHECKOUT,
    {},
    "deno task moonbase admins --add <email> <password>",
  ],
  [
    "a checkout with options: the task takes them",
    CHECKOUT,
    { dataDir: "./d", database: "PSQL" },
    "deno task moonbase --dataDir ./d --database PSQL --connection <url> admins --add <email> <password>",
  ],
  [
    "Deno from npx, not on PATH: npx in the checkout",
    { ...CHECKOUT, execPath: NPX, which: () => undefined },
    {},
    "npx -y deno@2.9.6 task moonbase admins --add <email> <password>",
  ],
  [
    "Deno from npx, run from elsewhere: npx with main.ts's path",
    { ...CHECKOUT, execPath: NPX, which: () => undefined, cwd: "/home/u" },
    {},
    "npx -y deno@2.9.6 run -A /srv/moonbase/main.ts admins --add <email> <password>",
  ],
  [
    "a directory without the task: deno run",
    { ...CHECKOUT, hasTask: () => false },
    {},
    "deno run -A main.ts admins --add <email> <password>",
  ],
  [
    "Deno not on PATH and not from npm: its path",
    { ...CHECKOUT, execPath: "/opt/deno/bin/deno", which: () => undefined },
    {},
    "/opt/deno/bin/deno task moonbase admins --add <email> <password>",
  ],
  [
    "a compiled binary in the working directory",
    {
      ...CHECKOUT,
      execPath: "/srv/moonbase/moonbase",
      mainModule: "file:///srv/moonbase/main.ts",
      which: () => undefined,
    },
    {},
    "./moonbase admins --add <email> <password>",
  ],
];

for (const [name, inv, db, want] of CASES) {
  Deno.test(`cli hint: ${name}`, () => {
    assert.equal(commandFor(ARGS, db, inv), want);
  });
}

Deno.test("cli hint: the checkout's deno.json has the moonbase task with start's permissions", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("../deno.json", import.meta.url)),
  );
  const task: string = config.tasks.moonbase;
  assert.match(task, /^deno run .* main\.ts$/);
  const perms = (s: string) => s.match(/--(allow|unstable)-[a-z]+/g)?.sort();
  assert.deepEqual(perms(task), perms(config.tasks.start));
});
