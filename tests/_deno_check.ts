/**
 * `deno check` of several files in one process (one type-checker start
 * instead of one per file), its diagnostics told apart by the file each is
 * in: for tests that check a program that must type-check next to programs
 * that must not.
 *
 * @module
 */

/** One diagnostic: the name of the file it is in, and its whole text. */
export interface Diagnostic {
  file: string;
  text: string;
}

/** What one `deno check` run printed. */
export interface Checked {
  code: number;
  /** Standard output and error. */
  out: string;
  diagnostics: Diagnostic[];
  /** The count of "Found N errors" (0 when there is no such line). */
  found: number;
}

/** Runs `deno check <args>` in `cwd` and splits its diagnostics by file. */
export async function denoCheck(cwd: string, args: string[]): Promise<Checked> {
  const o = await new Deno.Command(Deno.execPath(), {
    args: ["check", ...args],
    cwd,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  const out = dec.decode(o.stdout) + dec.decode(o.stderr);
  return {
    code: o.code,
    out,
    diagnostics: diagnostics(out),
    found: Number(/^Found (\d+) errors?\.?$/m.exec(out)?.[1] ?? 0),
  };
}

/**
 * The diagnostics of `deno check` output: each starts with `TSnnnn [ERROR]`
 * and names its place as `at file:///…/<file>:<line>:<column>` (the first
 * such line; the ones after it belong to related information).
 */
export function diagnostics(out: string): Diagnostic[] {
  return out.split(/^(?=TS\d+ \[ERROR\])/m)
    .filter((text) => /^TS\d+ \[ERROR\]/.test(text))
    .map((text) => ({
      file: /\n\s+at file:\/\/\S*\/([^/\s]+?):\d+:\d+/.exec(text)?.[1] ?? "",
      text,
    }));
}

/** The text of the diagnostics in `file`, joined ("" when none). */
export function diagnosticsIn(c: Checked, file: string): string {
  return c.diagnostics.filter((d) => d.file === file).map((d) => d.text)
    .join("\n");
}
