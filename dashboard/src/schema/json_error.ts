/**
 * Where JSON text goes wrong, as "line L, column C" (engines word and
 * place `JSON.parse` errors differently; this scanner finds the first bad
 * character the same way everywhere). Pure: no DOM.
 *
 * @module
 */

/** The offset of the first character that makes `text` invalid JSON (-1: valid). */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const fail = (): never => {
    throw i;
  };
  const lit = (word: string) => {
    if (text.slice(i, i + word.length) !== word) fail(); // points at the word
    i += word.length;
  };
  const str = () => {
    i++; // opening quote
    while (i < text.length && text[i] !== '"') {
      if (text.charCodeAt(i) < 0x20) fail();
      if (text[i] === "\\") {
        i++;
        if (text[i] === "u") {
          for (let k = 1; k <= 4; k++) {
            if (!/[0-9a-fA-F]/.test(text[i + k] ?? "")) {
              i += k;
              fail();
            }
          }
          i += 4;
        } else if (!'"\\/bfnrt'.includes(text[i] ?? "x")) fail();
      }
      i++;
    }
    if (i >= text.length) fail();
    i++;
  };
  const num = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!m || m[0] === "-" || m[0] === "") fail();
    i += m![0].length;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      ws();
      if (text[i] === "}") {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        str();
        ws();
        if (text[i] !== ":") fail();
        i++;
        value();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return;
        }
        fail();
      }
    }
    if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return;
        }
        fail();
      }
    }
    if (c === '"') return str();
    if (c === "t") return lit("true");
    if (c === "f") return lit("false");
    if (c === "n") return lit("null");
    if (c === "-" || (c >= "0" && c <= "9")) return num();
    fail();
  };
  try {
    value();
    ws();
    return i < text.length ? i : -1;
  } catch (at) {
    return typeof at === "number" ? Math.min(at, text.length) : 0;
  }
}

/** 1-based line and column of an offset. */
export function lineColumn(
  text: string,
  offset: number,
): { line: number; column: number } {
  const before = text.slice(0, offset).split("\n");
  return { line: before.length, column: before[before.length - 1].length + 1 };
}

/**
 * Parses JSON; on failure the error says where, in plain words:
 * `Invalid JSON at line 3, column 7 (near "}")`.
 */
export function parseJson(
  text: string,
): { ok: true; value: unknown } | {
  ok: false;
  message: string;
  offset: number;
} {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    const offset = Math.max(0, jsonErrorOffset(text));
    const { line, column } = lineColumn(text, offset);
    const near = text.slice(offset, offset + 12);
    return {
      ok: false,
      offset,
      message: `Invalid JSON at line ${line}, column ${column}` +
        (near
          ? ` (near ${JSON.stringify(near)})`
          : " (the text ends too early)"),
    };
  }
}
