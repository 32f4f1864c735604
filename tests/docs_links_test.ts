/**
 * Links between the Markdown pages of the checkout resolve: every relative
 * link of README.md, docs/ and bench/ names a file or directory that exists,
 * and every `#anchor` names a heading of the page it points at (as GitHub
 * makes anchors). Links to other sites are not followed.
 *
 * @module
 */

import assert from "node:assert/strict";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** Directories never searched: data, dependencies, build output. */
const SKIP = new Set(["data", "node_modules", "dist", "coverage"]);

/** The Markdown files under `dir`, as paths from the root. */
function markdownFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(join(ROOT, dir))) {
    if (e.name.startsWith(".") || SKIP.has(e.name)) continue;
    const path = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory) out.push(...markdownFiles(path));
    else if (e.isFile && e.name.endsWith(".md")) out.push(path);
  }
  return out.sort();
}

/** A page's text outside fenced code blocks and inline code spans. */
function prose(md: string): string {
  let fence = false;
  return md.split("\n").map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fence = !fence;
      return "";
    }
    return fence ? "" : line.replace(/(`+)[^`]*?\1/g, "");
  }).join("\n");
}

/** GitHub's anchor for a heading's text. */
export function slug(heading: string): string {
  return heading.trim().toLowerCase()
    .replace(/`/g, "")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/[^\p{L}\p{N}\p{M}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a page's headings (a repeated one gets -1, -2, …). */
function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fence = false;
  for (const line of md.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fence = !fence;
    const m = fence ? null : line.match(/^#{1,6}\s+(.*?)\s*#*\s*$/);
    if (!m) continue;
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The broken relative links of the pages given as {path: text}. */
export function brokenLinks(
  pages: Map<string, string>,
  exists: (path: string) => boolean,
): string[] {
  const broken: string[] = [];
  for (const [page, text] of pages) {
    const lines = prose(text).split("\n");
    lines.forEach((line, i) => {
      for (
        const m of line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?[^)]*\)/g)
      ) {
        const target = m[1];
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        const [path, anchor] = target.split("#", 2) as [string, string?];
        const file = path
          ? relative(ROOT, join(ROOT, dirname(page), decodeURI(path)))
          : page;
        const where = `${page}:${i + 1}: ${target}`;
        if (file.startsWith("..") || !exists(file)) {
          broken.push(`${where} (no such file)`);
        } else if (anchor !== undefined && file.endsWith(".md")) {
          const other = pages.get(file) ?? Deno.readTextFileSync(
            join(ROOT, file),
          );
          if (!anchors(other).has(anchor)) {
            broken.push(`${where} (no such heading)`);
          }
        }
      }
    });
  }
  return broken;
}

function existsInCheckout(path: string): boolean {
  try {
    Deno.statSync(join(ROOT, path));
    return true;
  } catch {
    return false; // statSync throws NotFound: the link is broken
  }
}

Deno.test("docs links: GitHub's anchors for headings", () => {
  assert.equal(
    slug("Acting as the caller: `{ as }`"),
    "acting-as-the-caller--as-",
  );
  assert.equal(slug("Five-minute tour (curl)"), "five-minute-tour-curl");
  assert.equal(slug("lib/http — the server"), "libhttp--the-server");
  assert.equal(slug("Reloading in `--dev`"), "reloading-in---dev");
  assert.deepEqual(
    [...anchors("# A\n\n## B\n\n```sh\n# not a heading\n```\n\n## B\n")],
    ["a", "b", "b-1"],
  );
});

Deno.test("docs links: a broken link or anchor is reported", () => {
  const pages = new Map([
    ["docs/a.md", "# Top\n\n[ok](b.md#there) [no](b.md#gone) [file](c.md)"],
    ["docs/b.md", "# There\n\n[up](../README.md) `[code](x.md)` [self](#top)"],
  ]);
  const files = new Set(["docs/a.md", "docs/b.md", "README.md"]);
  assert.deepEqual(brokenLinks(pages, (p) => files.has(p)), [
    "docs/a.md:3: b.md#gone (no such heading)",
    "docs/a.md:3: c.md (no such file)",
    "docs/b.md:3: #top (no such heading)",
  ]);
});

Deno.test("docs links: every relative link of the Markdown pages resolves", () => {
  const files = markdownFiles("");
  assert.ok(files.includes("README.md") && files.includes("docs/README.md"));
  const pages = new Map(
    files.map((f) => [f, Deno.readTextFileSync(join(ROOT, f))]),
  );
  assert.deepEqual(brokenLinks(pages, existsInCheckout), []);
});

Deno.test("docs links: docs/README.md links every page of docs/", () => {
  const index = Deno.readTextFileSync(join(ROOT, "docs/README.md"));
  const linked = new Set(
    [...prose(index).matchAll(/\]\(([^)#\s]+\.md)(?:#[^)]*)?\)/g)].map((m) =>
      relative(ROOT, join(ROOT, "docs", m[1]))
    ),
  );
  const pages = markdownFiles("docs").filter((f) => f !== "docs/README.md");
  assert.ok(pages.length > 10, "the docs pages are gone");
  assert.deepEqual(pages.filter((f) => !linked.has(f)), []);
});

/** The .ts and .tsx files under `dir`, as paths from the root. */
function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(join(ROOT, dir))) {
    if (e.name.startsWith(".") || SKIP.has(e.name)) continue;
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...sourceFiles(path));
    else if (/\.tsx?$/.test(e.name)) out.push(path);
  }
  return out;
}

Deno.test("docs links: source files cite docs pages that exist, not README sections", () => {
  const files = ["main.ts", "mod.ts"];
  for (const d of ["lib", "routes", "tests", "dashboard/src", "bench"]) {
    files.push(...sourceFiles(d));
  }
  const problems: string[] = [];
  for (const f of files) {
    if (f === "tests/docs_links_test.ts") continue;
    Deno.readTextFileSync(join(ROOT, f)).split("\n").forEach((line, i) => {
      for (const [path] of line.matchAll(/\bdocs\/[\w./-]+\.md\b/g)) {
        if (!existsInCheckout(path)) problems.push(`${f}:${i + 1}: ${path}`);
      }
      // The manual left README.md: a section of it is cited by its page.
      if (/README,? "/.test(line)) {
        problems.push(`${f}:${i + 1}: ${line.trim()}`);
      }
    });
  }
  assert.deepEqual(problems, []);
});
