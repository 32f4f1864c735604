/**
 * Builds the npm package's files into `client/dist/` (gitignored):
 * `moonbase.js`, the client as one ES module (`deno bundle`), and
 * `types/`, its declarations (`tsc` from npm `typescript`, a build-time
 * tool only: the package has no dependencies). Run by `deno task build`;
 * `npm pack` and `npm publish` take the files it made.
 *
 * @module
 */

const here = new URL(".", import.meta.url);
const dist = new URL("dist/", here);
await Deno.remove(dist, { recursive: true }).catch(() => {});
await Deno.mkdir(dist, { recursive: true });

async function run(what: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: here.pathname,
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!out.success) {
    console.error(`Cannot build the client: ${what} failed`);
    Deno.exit(1);
  }
}

await run("deno bundle", [
  "bundle",
  "--quiet",
  "--platform",
  "browser",
  "--output",
  new URL("moonbase.js", dist).pathname,
  new URL("mod.ts", here).pathname,
]);

const types = new URL("types/", dist);
await run("tsc (declarations)", [
  "run",
  "--allow-read",
  "--allow-write",
  "--allow-env",
  "npm:typescript@5.9.3/tsc",
  "--declaration",
  "--emitDeclarationOnly",
  "--strict",
  "--target",
  "es2022",
  "--module",
  "nodenext",
  "--moduleResolution",
  "nodenext",
  "--allowImportingTsExtensions",
  "--rewriteRelativeImportExtensions",
  "--lib",
  "es2022,dom,dom.iterable",
  "--skipLibCheck",
  "--outDir",
  types.pathname,
  "mod.ts",
]);

// The declarations import each other as `./x.ts`; npm's TypeScript users
// resolve `./x.js` to `./x.d.ts`.
for await (const path of walk(types)) {
  const text = await Deno.readTextFile(path);
  await Deno.writeTextFile(
    path,
    text.replace(/(from\s+["'])(\.{1,2}\/[^"']+)\.ts(["'])/g, "$1$2.js$3"),
  );
}

async function* walk(dir: URL): AsyncGenerator<URL> {
  for await (const e of Deno.readDir(dir)) {
    const url = new URL(e.name + (e.isDirectory ? "/" : ""), dir);
    if (e.isDirectory) yield* walk(url);
    else if (e.name.endsWith(".d.ts")) yield url;
  }
}
