/**
 * A WebSocket client on a raw TCP connection, for attacks a browser-grade
 * client cannot make: it never reads what the server sends, sends frame
 * headers without their payload, and reads the server's frames itself
 * (how the connection ended, and with which close code).
 *
 * @module
 */

const encoder = new TextEncoder();

/** An upgraded raw connection. */
export interface RawWs {
  conn: Deno.Conn;
  /** Bytes read after the 101's head (the first frames, if any). */
  leftover: Uint8Array<ArrayBuffer>;
}

/** What reading a raw connection to its end found. */
export interface RawEnd {
  /** The connection ended (EOF or reset) within the time given. */
  ended: boolean;
  /** The close code of the server's close frame, when one arrived. */
  closeCode?: number;
  /** Bytes read (frames included). */
  bytes: number;
  /** Text messages read. */
  texts: string[];
  /** Frames read (opcode and payload; the first 100). */
  frames: { op: number; payload: Uint8Array }[];
}

/** Upgrades a new connection to `/api/v1/realtime/ws?<query>`; throws unless 101. */
export function rawWs(url: string, query = ""): Promise<RawWs> {
  return rawUpgrade(url, `/api/v1/realtime/ws${query ? `?${query}` : ""}`);
}

/** Upgrades a new connection to `path` (with extra header lines); throws unless 101. */
export async function rawUpgrade(
  url: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<RawWs> {
  const conn = await Deno.connect({
    hostname: "127.0.0.1",
    port: Number(new URL(url).port),
  });
  await writeAll(
    conn,
    encoder.encode(
      `GET ${path} HTTP/1.1\r\n` +
        "Host: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
        "Sec-WebSocket-Version: 13\r\n" +
        Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("") +
        "\r\n",
    ),
  );
  let got: Uint8Array<ArrayBuffer> = new Uint8Array(0);
  const buf = new Uint8Array(4096);
  for (;;) {
    const n = await conn.read(buf);
    if (n === null) {
      conn.close();
      throw new Error("closed before the upgrade answered");
    }
    got = concat(got, buf.subarray(0, n));
    const text = new TextDecoder("latin1").decode(got);
    const end = text.indexOf("\r\n\r\n");
    if (end < 0) continue;
    if (!text.startsWith("HTTP/1.1 101 ")) {
      conn.close();
      throw new Error(`no upgrade: ${text.split("\r\n")[0]}`);
    }
    return { conn, leftover: got.slice(end + 4) };
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** Writes all of `bytes` (`Conn.write` may take only part of them). */
export async function writeAll(
  conn: Deno.Conn,
  bytes: Uint8Array,
): Promise<void> {
  for (let at = 0; at < bytes.length;) {
    at += await conn.write(bytes.subarray(at));
  }
}

/** The head of a masked client frame of `length` payload bytes (mask key included). */
export function frameHead(length: number, opcode = 1, fin = true): Uint8Array {
  const head: number[] = [(fin ? 0x80 : 0) | opcode];
  if (length < 126) head.push(0x80 | length);
  else if (length < 65536) head.push(0x80 | 126, length >> 8, length & 255);
  else {
    head.push(0x80 | 127);
    for (let i = 7; i >= 0; i--) {
      head.push(Math.floor(length / 2 ** (8 * i)) & 255);
    }
  }
  head.push(0, 0, 0, 0); // mask key 0: the payload goes as it is
  return new Uint8Array(head);
}

/** A whole masked client text frame. */
export function textFrame(text: string): Uint8Array {
  return clientFrame(1, encoder.encode(text));
}

/** A whole client frame; masked (with a non-zero key) unless told. */
export function clientFrame(
  opcode: number,
  payload: Uint8Array,
  o: { fin?: boolean; masked?: boolean } = {},
): Uint8Array {
  const head = frameHead(payload.length, opcode, o.fin ?? true);
  if (o.masked === false) {
    const bare = head.slice(0, head.length - 4);
    bare[1] &= 0x7f;
    return concat(bare, payload);
  }
  const key = [0x12, 0x34, 0x56, 0x78];
  head.set(key, head.length - 4);
  return concat(head, payload.map((b, i) => b ^ key[i & 3]));
}

/**
 * Reads the server's frames until the connection ends, `ms` pass, more
 * than `maxBytes` arrived (then `ended` is false), or `stop` says so.
 */
export async function readToEnd(
  ws: RawWs,
  ms: number,
  maxBytes = 64 * 1024 * 1024,
  stop: (end: RawEnd) => boolean = () => false,
): Promise<RawEnd> {
  const out: RawEnd = {
    ended: false,
    bytes: ws.leftover.length,
    texts: [],
    frames: [],
  };
  let pending = ws.leftover;
  const deadline = Date.now() + ms;
  const buf = new Uint8Array(1 << 16);
  const parse = () => {
    for (;;) {
      if (pending.length < 2) return;
      const op = pending[0] & 15;
      let len = pending[1] & 127, at = 2;
      if (len === 126) {
        if (pending.length < 4) return;
        len = (pending[2] << 8) | pending[3];
        at = 4;
      } else if (len === 127) {
        if (pending.length < 10) return;
        len = 0;
        for (let i = 2; i < 10; i++) len = len * 256 + pending[i];
        at = 10;
      }
      if (pending.length < at + len) return;
      const payload = pending.slice(at, at + len);
      if (out.frames.length < 100) out.frames.push({ op, payload });
      if (op === 8 && payload.length >= 2) {
        out.closeCode = (payload[0] << 8) | payload[1];
      } else if (op === 1 && (out.texts.length < 100 || len < 100)) {
        out.texts.push(new TextDecoder().decode(payload));
      }
      pending = pending.slice(at + len);
    }
  };
  parse();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    while (Date.now() < deadline && out.bytes <= maxBytes && !stop(out)) {
      const n = await Promise.race([
        ws.conn.read(buf),
        new Promise<number>((r) => {
          timer = setTimeout(() => r(-1), Math.max(1, deadline - Date.now()));
        }),
      ]);
      clearTimeout(timer);
      if (n === -1) break;
      if (n === null) {
        out.ended = true;
        break;
      }
      out.bytes += n;
      pending = concat(pending, buf.subarray(0, n));
      parse();
    }
  } catch {
    out.ended = true; // reset by the server
  } finally {
    clearTimeout(timer);
    try {
      ws.conn.close();
    } catch { /* closed */ }
  }
  return out;
}
