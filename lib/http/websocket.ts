/**
 * The server side of a WebSocket (RFC 6455) over an upgraded connection,
 * framed here rather than by Deno: Deno's WebSocket reads a frame of up to
 * 64 MiB whole before a handler sees its message, and a write its client
 * does not read keeps its connection (descriptor and all) open after a
 * close. Here a frame is refused from its header (1009) when its message
 * would pass `maxMessageBytes`, nothing is read while a message is too
 * big, and ending a connection closes it at once.
 *
 * It offers the part of the `WebSocket` interface a server uses:
 * `readyState`, `bufferedAmount` (bytes written and not yet taken by the
 * kernel), `send`, `close`, and the events `open`, `message` (text as a
 * string, binary as an `ArrayBuffer`), `close` and `error`. No extension
 * (compression) is negotiated; pings are answered; a client silent for
 * `idleTimeout` seconds is pinged, and closed when silent as long again.
 *
 * Over 350 lines, one idea: one connection's RFC 6455 state machine; kept
 * whole because its read buffer, frame parser, writes and close handshake
 * share that connection's state.
 *
 * @module
 */

import type net from "node:net";

/** Options of a framed WebSocket. */
export interface FramedOptions {
  /** Longest message a client may send, in bytes (then 1009). */
  maxMessageBytes: number;
  /** Seconds of silence before a ping (0: none). */
  idleTimeout: number;
}

/** What handlers use of a server WebSocket (Deno's or the framed one). */
export interface ServerSocket extends EventTarget {
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: Event) => unknown) | null;
  onmessage: ((ev: MessageEvent) => unknown) | null;
  onclose: ((ev: CloseEvent) => unknown) | null;
  onerror: ((ev: Event) => unknown) | null;
  /**
   * Stops delivering messages (and reading) until `resume` (absent on
   * Deno's WebSocket, which cannot).
   */
  pause?(): void;
  resume?(): void;
}

const CONNECTING = 0, OPEN = 1, CLOSING = 2, CLOSED = 3;
const TEXT = 1, BINARY = 2, CONTINUATION = 0, CLOSE = 8, PING = 9, PONG = 10;

/**
 * How long a refused or closed client's connection lingers for the close
 * frame to leave and the client to end its side (ms).
 */
const REFUSED_GRACE_MS = 1000;

const decoder = new TextDecoder("utf-8", { fatal: true });
const encoder = new TextEncoder();

/** A WebSocket whose frames Moonbase reads and writes itself. */
export class FramedWebSocket extends EventTarget implements ServerSocket {
  readyState: number = CONNECTING;
  onopen: ((ev: Event) => unknown) | null = null;
  onmessage: ((ev: MessageEvent) => unknown) | null = null;
  onclose: ((ev: CloseEvent) => unknown) | null = null;
  onerror: ((ev: Event) => unknown) | null = null;
  readonly #options: FramedOptions;
  #socket: net.Socket | undefined;
  /** Bytes received and not parsed yet. */
  #input: Uint8Array[] = [];
  #inputBytes = 0;
  /**
   * The message being received: its fragments so far, copied into one
   * buffer (grown up to `maxMessageBytes`), so a client sending many tiny
   * or empty fragments holds no more memory than one message.
   */
  #parts: Uint8Array = new Uint8Array(0);
  #partsBytes = 0;
  /** The opcode of the message being received (0: none). */
  #partsOp = 0;
  /** Nothing more is read (refused or closing). */
  #deaf = false;
  #closeCode = 1006;
  #closeReason = "";
  #clean = false;
  #sentClose = false;
  #silentSince = performance.now();
  #pinged = false;
  #idleTimer: ReturnType<typeof setInterval> | undefined;
  /** Cuts off a client that does not end its side after a close or refusal. */
  #cutOff: ReturnType<typeof setTimeout> | undefined;
  #paused = false;
  /** A pong waits to be taken by the kernel; the ping to answer after it. */
  #pongWaiting = false;
  #nextPong: Uint8Array | undefined;

  constructor(options: FramedOptions) {
    super();
    this.#options = options;
  }

  /** Bytes waiting to be written. */
  get bufferedAmount(): number {
    return this.#socket?.writableLength ?? 0;
  }

  /** Starts framing on `socket` (the 101 is written; `head`: bytes read after it). */
  attach(socket: net.Socket, head?: Uint8Array): void {
    this.#socket = socket;
    this.readyState = OPEN;
    socket.on("data", (chunk: Uint8Array) => this.#receive(chunk));
    socket.on("error", () => {/* a reset: "close" follows */});
    socket.on("close", () => this.#closed());
    const idle = this.#options.idleTimeout * 1000;
    if (idle > 0) {
      this.#idleTimer = setInterval(() => this.#checkIdle(idle), idle / 2);
      Deno.unrefTimer(this.#idleTimer);
    }
    this.#emit("open", new Event("open"));
    if (head && head.length > 0) this.#receive(head);
    socket.resume();
  }

  /** The handshake failed: no connection. */
  fail(): void {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    this.#emit("error", new Event("error"));
    this.#emit(
      "close",
      new CloseEvent("close", { code: 1006, reason: "", wasClean: false }),
    );
  }

  send(data: string): void {
    if (this.readyState === CONNECTING) {
      throw new DOMException("The WebSocket is not open", "InvalidStateError");
    }
    if (this.readyState !== OPEN) return;
    this.#write(TEXT, encoder.encode(data));
  }

  close(code = 1000, reason = ""): void {
    if (this.readyState === CLOSED || this.readyState === CLOSING) return;
    if (this.readyState === CONNECTING) return this.fail();
    this.readyState = CLOSING;
    this.#sendClose(code, reason);
  }

  /** Delivers no message, and reads nothing more, until `resume`. */
  pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    this.#socket?.pause();
  }

  /** Delivers the messages read meanwhile, and reads again. */
  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#parse();
    if (!this.#paused && !this.#deaf) this.#socket?.resume();
  }

  /** Closes the connection now, without waiting for anything. */
  terminate(): void {
    if (this.#socket) this.#socket.destroy();
    else this.fail();
  }

  #emit(type: string, ev: Event): void {
    const handler = type === "open"
      ? this.onopen
      : type === "message"
      ? this.onmessage
      : type === "close"
      ? this.onclose
      : this.onerror;
    try {
      handler?.call(this, ev as MessageEvent & CloseEvent);
    } catch (err) {
      reportError(err);
    }
    this.dispatchEvent(ev);
  }

  #sendClose(code: number, reason: string): void {
    if (this.#sentClose) return;
    this.#sentClose = true;
    const r = encoder.encode(reason).subarray(0, 123);
    const payload = new Uint8Array(2 + r.length);
    payload[0] = code >> 8;
    payload[1] = code & 255;
    payload.set(r, 2);
    this.#write(CLOSE, payload);
  }

  #write(op: number, payload: Uint8Array, done?: () => void): void {
    const s = this.#socket;
    if (!s || s.destroyed) return;
    const n = payload.length;
    const head = n < 126 ? 2 : n < 65536 ? 4 : 10;
    const frame = new Uint8Array(head + n);
    frame[0] = 0x80 | op;
    if (n < 126) frame[1] = n;
    else if (n < 65536) {
      frame[1] = 126;
      frame[2] = n >> 8;
      frame[3] = n & 255;
    } else {
      frame[1] = 127;
      new DataView(frame.buffer).setBigUint64(2, BigInt(n));
    }
    frame.set(payload, head);
    s.write(frame, done && (() => done()));
  }

  /**
   * Answers a ping. One pong is buffered at a time: pings that come while
   * it waits to be taken by the kernel are answered by one pong, for the
   * latest of them (RFC 6455 5.5.3 allows it), so a client that sends pings
   * and never reads cannot grow the server's buffer.
   */
  #pong(payload: Uint8Array): void {
    if (this.#pongWaiting) {
      this.#nextPong = payload;
      return;
    }
    this.#pongWaiting = true;
    this.#write(PONG, payload, () => {
      this.#pongWaiting = false;
      const next = this.#nextPong;
      this.#nextPong = undefined;
      if (next && this.readyState === OPEN) this.#pong(next);
    });
  }

  /** Refuses the connection (a protocol error, a message too big). */
  #refuse(code: number, reason: string): void {
    this.#deaf = true;
    this.#input = [];
    this.#inputBytes = 0;
    this.#dropMessage();
    this.#closeCode = code;
    this.#closeReason = reason;
    if (this.readyState === OPEN) this.readyState = CLOSING;
    this.#sendClose(code, reason);
    // No close handshake with a client that broke the protocol, and
    // nothing more read from it.
    this.#socket?.pause();
    this.#socket?.end();
    this.#cutOffLater();
  }

  #receive(chunk: Uint8Array): void {
    this.#silentSince = performance.now();
    this.#pinged = false;
    if (this.#deaf) return;
    this.#input.push(chunk);
    this.#inputBytes += chunk.length;
    this.#parse();
  }

  /** The first `n` buffered input bytes (joined when needed), without consuming. */
  #peek(n: number): Uint8Array {
    const first = this.#input[0];
    if (first.length >= n) return first.subarray(0, n);
    const out = new Uint8Array(n);
    let at = 0;
    for (const c of this.#input) {
      const take = Math.min(c.length, n - at);
      out.set(c.subarray(0, take), at);
      at += take;
      if (at === n) break;
    }
    return out;
  }

  #consume(n: number): void {
    this.#inputBytes -= n;
    while (n > 0) {
      const first = this.#input[0];
      if (first.length <= n) {
        this.#input.shift();
        n -= first.length;
      } else {
        this.#input[0] = first.subarray(n);
        n = 0;
      }
    }
  }

  #parse(): void {
    while (!this.#deaf && !this.#paused && this.#inputBytes >= 2) {
      const b = this.#peek(2);
      const fin = (b[0] & 0x80) !== 0, op = b[0] & 15;
      const masked = (b[1] & 0x80) !== 0;
      let len = b[1] & 127;
      const ext = len === 126 ? 2 : len === 127 ? 8 : 0;
      if ((b[0] & 0x70) !== 0) return this.#refuse(1002, "Reserved bits set");
      if (!masked) return this.#refuse(1002, "Client frames must be masked");
      const control = op >= 8;
      if (control && (!fin || len > 125)) {
        return this.#refuse(1002, "Bad control frame");
      }
      if (![TEXT, BINARY, CONTINUATION, CLOSE, PING, PONG].includes(op)) {
        return this.#refuse(1002, "Unknown opcode");
      }
      if (this.#inputBytes < 2 + ext) return;
      if (ext === 2) {
        const e = this.#peek(4);
        len = (e[2] << 8) | e[3];
      } else if (ext === 8) {
        const v = new DataView(this.#peek(10).slice(2).buffer).getBigUint64(0);
        len = v > BigInt(Number.MAX_SAFE_INTEGER) ? Infinity : Number(v);
      }
      if (!control) {
        if ((op === CONTINUATION) !== (this.#partsOp !== 0)) {
          return this.#refuse(1002, "Unexpected continuation");
        }
        // Refused from the header: the payload is never read.
        if (this.#partsBytes + len > this.#options.maxMessageBytes) {
          return this.#refuse(
            1009,
            `Message too big (at most ${this.#options.maxMessageBytes} bytes)`,
          );
        }
      }
      const at = 2 + ext + 4;
      if (this.#inputBytes < at + len) return;
      const all = this.#peek(at + len);
      const mask = all.subarray(at - 4, at);
      const payload = all.slice(at, at + len);
      for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
      this.#consume(at + len);
      if (control) this.#control(op, payload);
      else this.#data(op, fin, payload);
    }
  }

  #control(op: number, payload: Uint8Array): void {
    if (op === PING) {
      if (this.readyState === OPEN) this.#pong(payload);
      return;
    }
    if (op !== CLOSE) return; // a pong: the client is there (noted on receive)
    if (payload.length === 1) return this.#refuse(1002, "Bad close frame");
    let code = 1005, reason = "";
    if (payload.length >= 2) {
      code = (payload[0] << 8) | payload[1];
      // Codes a close frame may carry (RFC 6455 7.4): never 1005, 1006 or
      // 1015 (they are not sent), nor an unassigned one; such a close
      // would otherwise be echoed back.
      if (!sendable(code)) return this.#refuse(1002, "Bad close code");
      try {
        reason = decoder.decode(payload.subarray(2));
      } catch {
        return this.#refuse(1007, "Close reason is not UTF-8");
      }
    }
    this.#closeCode = code;
    this.#closeReason = reason;
    this.#clean = true;
    this.#deaf = true;
    if (this.readyState === OPEN) this.readyState = CLOSING;
    // Answer the close (echoing its code), then end the connection; a
    // client that never ends its side is cut off (it holds a connection).
    this.#sendClose(code === 1005 ? 1000 : code, "");
    this.#socket?.end();
    this.#cutOffLater();
  }

  #data(op: number, fin: boolean, payload: Uint8Array): void {
    if (op !== CONTINUATION) this.#partsOp = op;
    let bytes = payload;
    if (!fin || this.#partsBytes > 0) {
      this.#append(payload);
      if (!fin) return;
      bytes = this.#parts.subarray(0, this.#partsBytes);
    }
    const kind = this.#partsOp;
    this.#dropMessage();
    if (this.readyState !== OPEN) return;
    let data: string | ArrayBuffer;
    if (kind === TEXT) {
      try {
        data = decoder.decode(bytes);
      } catch {
        return this.#refuse(1007, "Text is not UTF-8");
      }
    } else {
      data = bytes.buffer.slice(
        bytes.byteOffset,
        bytes.byteOffset + bytes.byteLength,
      ) as ArrayBuffer;
    }
    this.#emit("message", new MessageEvent("message", { data }));
  }

  /** Adds a fragment to the message being received. */
  #append(payload: Uint8Array): void {
    const need = this.#partsBytes + payload.length;
    if (need > this.#parts.length) {
      const grown = new Uint8Array(
        Math.min(
          this.#options.maxMessageBytes,
          Math.max(need, 2 * this.#parts.length, 256),
        ),
      );
      grown.set(this.#parts.subarray(0, this.#partsBytes));
      this.#parts = grown;
    }
    this.#parts.set(payload, this.#partsBytes);
    this.#partsBytes = need;
  }

  #dropMessage(): void {
    this.#parts = new Uint8Array(0);
    this.#partsBytes = 0;
    this.#partsOp = 0;
  }

  #checkIdle(idle: number): void {
    if (this.readyState !== OPEN) return;
    if (performance.now() - this.#silentSince < idle) return;
    if (this.#pinged) {
      this.#closeCode = 1001;
      this.terminate();
      return;
    }
    this.#pinged = true;
    this.#silentSince = performance.now();
    this.#write(PING, new Uint8Array(0));
  }

  /** Ends the connection in {@link REFUSED_GRACE_MS} unless the client ends it first. */
  #cutOffLater(): void {
    clearTimeout(this.#cutOff);
    this.#cutOff = setTimeout(() => this.terminate(), REFUSED_GRACE_MS);
    Deno.unrefTimer(this.#cutOff);
  }

  #closed(): void {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    clearInterval(this.#idleTimer);
    clearTimeout(this.#cutOff);
    this.#input = [];
    this.#dropMessage();
    this.#emit(
      "close",
      new CloseEvent("close", {
        code: this.#closeCode,
        reason: this.#closeReason,
        wasClean: this.#clean,
      }),
    );
  }
}

/** Whether a close frame may carry `code` (RFC 6455 7.4.1, 7.4.2; IANA). */
function sendable(code: number): boolean {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
    (code >= 3000 && code <= 4999);
}
