/**
 * Builds the dashboard into `dashboard/dist/`: `app.js` (the bundle of
 * `src/main.tsx`, Preact included) and `app.css` (every file of `styles/`
 * in name order). Run by `deno task build`, `start`, `test` and `compile`.
 *
 * @module
 */

const here = new URL(".", import.meta.url);
const dist = new URL("dist/", here);
await Deno.mkdir(dist, { recursive: true });

const bundle = await new Deno.Command(Deno.execPath(), {
  args: [
    "bundle",
    "--quiet",
    "--minify",
    "--platform",
    "browser",
    "--output",
    new URL("app.js", dist).pathname,
    new URL("src/main.tsx", here).pathname,
  ],
  stdout: "inherit",
  stderr: "inherit",
}).output();
if (!bundle.success) {
  console.error("Cannot build the dashboard: deno bundle failed");
  Deno.exit(1);
}

const styles = new URL("styles/", here);
const names: string[] = [];
for await (const e of Deno.readDir(styles)) {
  if (e.isFile && e.name.endsWith(".css")) names.push(e.name);
}
names.sort();
const parts = await Promise.all(
  names.map(async (n) =>
    `/* ${n} */\n${await Deno.readTextFile(new URL(n, styles))}`
  ),
);
await Deno.writeTextFile(new URL("app.css", dist), parts.join("\n"));
