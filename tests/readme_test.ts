/**
 * The examples of README.md and of every page under docs/, run as a new user
 * would run them: in order, with bash, against a fresh server. The README's
 * five-minute tour runs first; then each docs page that has examples runs its
 * blocks in order, starting from what the tour made (its variables, such as
 * `$TOKEN`, and its entities), never from another page's.
 *
 * Convention (documented here, in the README's tour and in
 * docs/internals/development.md): a ```sh or ```bash block is run when the
 * line before it (blank lines aside) is
 *
 *     <!-- readme-test -->            every HTTP answer must be 2xx
 *     <!-- readme-test: 201 200 -->   the block's HTTP answers, in order
 *
 * Every block that calls `curl` must be marked (so no example escapes the
 * test); long-running commands (`deno task start`, `serve`) and the
 * PostgreSQL set-up (sudo) stay unmarked.
 *
 * Each block runs in its own `bash` with `set -euo pipefail`, in the checkout
 * (where a reader runs them), and must leave no file there: sample files go
 * to a temp directory (`mktemp`). The variables a block assigns at its top
 * level (e.g. `TOKEN=$(curl … | jq -r .data.token)`) are carried to the next
 * blocks. Rewritten before running: `localhost:7070` → the test server's
 * address; `deno` → the running Deno, and the server's `--dataDir` (and
 * `--database PSQL --connection …` on PostgreSQL) added after
 * `deno task moonbase` and `deno run -A main.ts`. `curl` is wrapped to record
 * each answer's status (`-D`) and nothing else. A realtime example's pauses
 * (a subscriber in the background, `sleep 1` before the write, `wait` for its
 * `--max-time`) become polls: until the stream's `event: ready` arrives, then
 * until a change event does, then the subscriber is stopped (`pacedStream`).
 *
 * Needs `curl` and `jq` (the README's examples use both). `MB_README_SHOW=1`
 * prints every block with its output.
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { forEachDb, startServer } from "./_server.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** A Markdown page of the checkout: its path from the root, and its text. */
interface Page {
  path: string;
  text: string;
}

/** The Markdown files under `dir` (a path from the root), in path order. */
function docsPages(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(`${ROOT}/${dir}`)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...docsPages(path));
    else if (e.isFile && e.name.endsWith(".md")) out.push(path);
  }
  return out.sort();
}

/** README.md first, then every page under docs/. */
const PAGES: Page[] = ["README.md", ...docsPages("docs")].map((path) => ({
  path,
  text: Deno.readTextFileSync(`${ROOT}/${path}`),
}));
const README = PAGES[0].text;

/** A runnable block of a page. */
interface Block {
  /** The page's path from the checkout's root. */
  page: string;
  line: number;
  code: string;
  /** Expected statuses in order, or undefined: every answer 2xx. */
  statuses?: number[];
}

/** A page's fenced shell blocks, with their marks. */
function shellBlocks(page: Page): (Block & { marked: boolean })[] {
  const lines = page.text.split("\n");
  const out: (Block & { marked: boolean })[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(sh|bash)\s*$/.test(lines[i])) continue;
    const end = lines.indexOf("```", i + 1);
    assert.ok(end > i, `unclosed block at ${page.path}:${i + 1}`);
    let j = i - 1;
    while (j >= 0 && lines[j].trim() === "") j--;
    const mark = lines[j]?.match(/^<!-- readme-test(?::([\d\s]*))? -->$/);
    out.push({
      page: page.path,
      line: i + 1,
      code: lines.slice(i + 1, end).join("\n"),
      marked: mark !== null && mark !== undefined,
      statuses: mark?.[1]?.trim()
        ? mark[1].trim().split(/\s+/).map(Number)
        : undefined,
    });
    i = end;
  }
  return out;
}

function which(cmd: string): boolean {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      if (Deno.statSync(`${dir}/${cmd}`).isFile) return true;
    } catch { /* not here */ }
  }
  return false;
}

/** Every page's shell blocks, README.md first. */
function allBlocks(): (Block & { marked: boolean })[] {
  return PAGES.flatMap(shellBlocks);
}

Deno.test("readme: every example block that calls curl is run", () => {
  const blocks = allBlocks();
  const unmarked = blocks.filter((b) => !b.marked && /\bcurl\b/.test(b.code));
  assert.deepEqual(unmarked.map((b) => `${b.page}:${b.line}`), []);
  assert.ok(blocks.filter((b) => b.marked).length >= 10, "marks are gone");
  assert.ok(
    shellBlocks(PAGES[0]).filter((b) => b.marked).length >= 5,
    "the README's tour lost its marks",
  );
  assert.ok(
    blocks.some((b) => b.marked && b.page.startsWith("docs/")),
    "no example of docs/ is run",
  );
  // The first lines stay: the two commands to run and to test.
  assert.match(README, /```sh\ndeno task start .*\ndeno task test .*\n```/);
});

Deno.test("readme: example blocks write files to a temp directory only", () => {
  const problems: string[] = [];
  for (const b of allBlocks().filter((b) => b.marked)) {
    // Targets of `>`, `-o` and `--output`: a variable ($SAMPLES/…, made by
    // mktemp) or /dev/null, never a name relative to the checkout. (`=>` is a
    // rule's arrow function, not a redirection.)
    for (
      const m of b.code.matchAll(/(?:[^2&=]>|-o|--output)\s+("?)([^\s"]+)\1/g)
    ) {
      const target = m[2];
      if (!/^(\$\w+|\$\{\w+\}|\/dev\/null$)/.test(target)) {
        problems.push(`${b.page}:${b.line}: writes ${target}`);
      }
    }
  }
  assert.deepEqual(problems, []);
});

Deno.test("readme: the extension example imports a path that exists", async () => {
  const blocks = PAGES.flatMap((p) => [
    ...p.text.matchAll(
      /```ts[^\n]*\n\/\/ (scripts\/\S+)[^\n]*\n([\s\S]*?)```/g,
    ),
  ]);
  assert.ok(blocks.length > 0, "the scripts/ example is gone");
  let checked = 0;
  for (const [, file, code] of blocks) {
    for (const [, spec] of code.matchAll(/from "((?:\.{1,2})?\/[^"]+)"/g)) {
      checked++;
      const path = fileURLToPath(new URL(spec, `file://${ROOT}/${file}`));
      assert.ok(
        (await Deno.stat(path).catch(() => null))?.isFile,
        `${file} imports ${spec}: ${path} does not exist`,
      );
      if (/\bScriptApp\b/.test(code)) {
        assert.match(await Deno.readTextFile(path), /\bScriptApp\b/);
      }
    }
  }
  assert.ok(checked > 0, "no import by path to check");
});

/** The names of the files at the checkout's top level. */
function topLevelFiles(): string[] {
  return [...Deno.readDirSync(ROOT)].filter((e) => e.isFile).map((e) => e.name);
}

/** Shell words quoted for bash. */
function q(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** Statuses recorded by the curl wrapper, in order. */
async function statusesIn(dir: string): Promise<number[]> {
  const names = [...Deno.readDirSync(dir)].map((e) => e.name)
    .filter((n) => /^\d+$/.test(n)).sort((a, b) => Number(a) - Number(b));
  const out: number[] = [];
  for (const n of names) {
    const text = await Deno.readTextFile(`${dir}/${n}`);
    const codes = [...text.matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)];
    out.push(Number(codes.at(-1)?.[1] ?? 0)); // after any 100 Continue
    await Deno.remove(`${dir}/${n}`);
  }
  return out;
}

/**
 * A realtime example (`curl -N … > "$EVENTS" &`, `sleep 1`, a write,
 * `wait || true`) without its waits on the clock: the write goes once the
 * subscriber has its `event: ready`, and the subscriber is stopped once a
 * change event arrived (its `--max-time` still bounds it). Other blocks are
 * returned as they are.
 */
function pacedStream(code: string): string {
  const stream = /^curl -s -N --max-time \d+ .* > "\$EVENTS" &\nsleep 1$/m;
  if (!stream.test(code)) return code;
  const until = (pattern: string) =>
    `for _ in $(seq 400); do grep -q '${pattern}' "$EVENTS" && break; sleep 0.025; done`;
  return code.replace(
    /^(curl -s -N --max-time \d+ .* > "\$EVENTS" &)\nsleep 1$/m,
    `$1\n{ MB_SUBSCRIBER=$!; }\n${until("^event: ready")}`,
  ).replace(
    /^wait \|\| true$/m,
    `${until('^data: {"action"')}\n` +
      `pkill -P "$MB_SUBSCRIBER" curl || true\nwait || true`,
  );
}

const PRELUDE = `set -euo pipefail
curl() {
  local n
  n=$(( $(cat "$MB_HDRS/next") + 1 ))
  echo "$n" > "$MB_HDRS/next"
  command curl -D "$MB_HDRS/$n" "$@"
}
source "$MB_STATE"
`;

forEachDb(
  "readme: the examples run in order on a fresh server",
  async (t, db) => {
    assert.ok(
      which("curl") && which("jq"),
      "the README test needs curl and jq (apt-get install curl jq)",
    );
    const server = await startServer(db);
    const work = await Deno.makeTempDir({ prefix: "mb_readme_" });
    try {
      const hdrs = `${work}/.headers`;
      await Deno.mkdir(hdrs);
      await Deno.writeTextFile(`${hdrs}/next`, "0");
      const state = `${work}/.state`;
      await Deno.writeTextFile(state, "");
      const dbArgs = db === "postgres"
        ? ` --database PSQL --connection ${q(server.connection!)}`
        : "";
      const deno = q(Deno.execPath());
      const options = ` --dataDir ${q(server.dataDir)}${dbArgs}`;
      const before = topLevelFiles();
      const host = server.url.replace(/^http:\/\//, "");
      const env: Record<string, string> = {
        ...Deno.env.toObject(),
        NO_COLOR: "1",
      };
      delete env.MB_JWT_SECRET;
      // What the README's tour leaves behind (its variables): every docs page
      // starts from it, so a page's examples depend on the tour and on that
      // page's earlier blocks only.
      let afterTour: string | undefined;
      const runs = PAGES.map((p) => shellBlocks(p).filter((b) => b.marked))
        .filter((blocks) => blocks.length > 0);
      assert.equal(runs[0]?.[0]?.page, "README.md", "the tour runs first");
      const blocks = runs.flat();
      for (const [i, block] of blocks.entries()) {
        if (i > 0 && block.page !== blocks[i - 1].page) {
          afterTour ??= await Deno.readTextFile(state);
          await Deno.writeTextFile(state, afterTour);
          // A page's logins do not eat the next page's: every example runs
          // from one address, under one login rate limit (5 a minute).
          await server.app.storage.run(`DELETE FROM "mb_ratelimit"`);
        }
        await t.step(`${block.page}:${block.line}`, async () => {
          const code = pacedStream(block.code)
            .replaceAll("localhost:7070", host)
            .replaceAll("deno task moonbase", `${deno} task moonbase${options}`)
            .replaceAll(
              "deno run -A main.ts",
              `${deno} run -A main.ts${options}`,
            );
          const names = [
            ...new Set(
              [...code.matchAll(/^([A-Za-z_]\w*)=/gm)].map((m) => m[1]),
            ),
          ];
          const save = names.map((n) => `declare -p ${n} >> "$MB_STATE"`)
            .join("\n");
          const out = await new Deno.Command("bash", {
            args: ["-c", `${PRELUDE}${code}\n${save}\n`],
            cwd: ROOT,
            env: { ...env, MB_HDRS: hdrs, MB_STATE: state },
            stdout: "piped",
            stderr: "piped",
            signal: AbortSignal.timeout(120_000),
          }).output();
          const dec = new TextDecoder();
          const shown = `--- block\n${code}\n--- stdout\n${
            dec.decode(out.stdout).slice(0, 3000)
          }\n--- stderr\n${dec.decode(out.stderr).slice(0, 3000)}`;
          if (Deno.env.get("MB_README_SHOW")) console.log(shown);
          assert.equal(out.code, 0, `exit ${out.code}\n${shown}`);
          const got = await statusesIn(hdrs);
          if (block.statuses) assert.deepEqual(got, block.statuses, shown);
          else {
            assert.ok(
              got.every((s) => s >= 200 && s < 300),
              `${got}\n${shown}`,
            );
          }
        });
      }
      await t.step("the examples left no file in the checkout", () => {
        const added = topLevelFiles().filter((n) => !before.includes(n));
        assert.deepEqual(added, []);
      });
    } finally {
      await server.close();
      await Deno.remove(work, { recursive: true });
    }
  },
);
