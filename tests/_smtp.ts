/**
 * A real SMTP server for the mail tests (npm `smtp-server`, by nodemailer's
 * authors): it listens on a free loopback port, parses every message it
 * accepts (npm `mailparser`), and can refuse mail, go down and come back on
 * the same port. Optional AUTH (PLAIN/LOGIN, without TLS).
 *
 * @module
 */

import { SMTPServer } from "smtp-server";
import { simpleParser } from "mailparser";

/** A message the server accepted. */
export interface ReceivedMail {
  /** The envelope's recipients. */
  to: string[];
  /** The envelope's sender. */
  from: string;
  subject: string;
  text: string;
  /** "" when the message had no HTML part. */
  html: string;
  /** Header lines, lower-case names. */
  headers: Map<string, unknown>;
  /** The message as it arrived. */
  raw: string;
}

/** What the server does with the next messages. */
export interface SmtpOptions {
  /** Require AUTH with these credentials. */
  auth?: { username: string; password: string };
}

/** A running test SMTP server. */
export interface TestSmtp {
  readonly port: number;
  /** The accepted messages, in order. */
  readonly received: ReceivedMail[];
  /** Refuses every recipient with this reply (e.g. "550 No such user"); undefined accepts. */
  refuse(reply: string | undefined): void;
  /** Stops listening (connections are refused) until `up()`. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  /** Resolves once `n` messages in all have arrived (throws after `ms`). */
  waitFor(n: number, ms?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

interface Session {
  envelope: {
    mailFrom: { address: string } | false;
    rcptTo: { address: string }[];
  };
}

interface SmtpError extends Error {
  responseCode?: number;
}

type Done = (err?: SmtpError | null) => void;

/** smtp-server has no types of its own: the part used here. */
interface Server {
  listen(port: number, host: string, cb: () => void): void;
  close(cb: () => void): void;
  server: {
    address(): { port: number };
    closeAllConnections?: () => void;
    on(event: "error", cb: (err: Error) => void): void;
  };
  on(event: "error", cb: (err: Error) => void): void;
}

type ServerCtor = new (options: Record<string, unknown>) => Server;
type Parse = (input: string) => Promise<{
  subject?: string;
  text?: string;
  html?: string | false;
  headers: Map<string, unknown>;
}>;

async function readAll(stream: AsyncIterable<Uint8Array>): Promise<string> {
  const parts: Uint8Array[] = [];
  for await (const chunk of stream) parts.push(chunk);
  return new TextDecoder().decode(
    parts.reduce((a, b) => {
      const c = new Uint8Array(a.length + b.length);
      c.set(a);
      c.set(b, a.length);
      return c;
    }, new Uint8Array()),
  );
}

/** Starts an SMTP server on a free loopback port. */
export async function startSmtp(options: SmtpOptions = {}): Promise<TestSmtp> {
  const received: ReceivedMail[] = [];
  let refusal: string | undefined;
  const waiters = new Set<() => void>();
  const make = () =>
    new (SMTPServer as unknown as ServerCtor)({
      logger: false,
      disabledCommands: options.auth ? ["STARTTLS"] : ["STARTTLS", "AUTH"],
      authOptional: !options.auth,
      allowInsecureAuth: true,
      onAuth(
        auth: { username: string; password: string },
        _s: Session,
        cb: (err: Error | null, res?: { user: string }) => void,
      ) {
        const want = options.auth;
        if (
          want && auth.username === want.username &&
          auth.password === want.password
        ) return cb(null, { user: auth.username });
        const err: SmtpError = new Error("Invalid username or password");
        err.responseCode = 535;
        cb(err);
      },
      onRcptTo(_addr: { address: string }, _s: Session, cb: Done) {
        if (refusal === undefined) return cb();
        const m = /^(\d{3})\s*(.*)$/.exec(refusal);
        const err: SmtpError = new Error(m ? m[2] : refusal);
        err.responseCode = m ? Number(m[1]) : 550;
        cb(err);
      },
      onData(stream: AsyncIterable<Uint8Array>, session: Session, cb: Done) {
        readAll(stream).then(async (raw) => {
          const parsed = await (simpleParser as unknown as Parse)(raw);
          received.push({
            to: session.envelope.rcptTo.map((r) => r.address),
            from: session.envelope.mailFrom
              ? session.envelope.mailFrom.address
              : "",
            subject: parsed.subject ?? "",
            text: parsed.text ?? "",
            html: parsed.html || "",
            headers: parsed.headers,
            raw,
          });
          for (const w of waiters) w();
          cb();
        }, (err) => cb(err));
      },
    });
  let server = make();
  const listen = (s: Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      s.on("error", reject);
      s.listen(port, "127.0.0.1", () => resolve(s.server.address().port));
    });
  const port = await listen(server, 0);
  let running = true;
  const stop = () =>
    new Promise<void>((resolve) => {
      if (!running) return resolve();
      running = false;
      server.server.closeAllConnections?.();
      server.close(() => resolve());
    });
  return {
    port,
    received,
    refuse(reply) {
      refusal = reply;
    },
    down: stop,
    async up() {
      if (running) return;
      server = make();
      await listen(server, port);
      running = true;
    },
    async waitFor(n, ms = 20_000) {
      const until = Date.now() + ms;
      while (received.length < n) {
        const left = until - Date.now();
        if (left <= 0) {
          throw new Error(
            `expected ${n} messages, got ${received.length} within ${ms} ms`,
          );
        }
        await new Promise<void>((resolve) => {
          const t = setTimeout(done, Math.min(left, 200));
          function done() {
            clearTimeout(t);
            waiters.delete(done);
            resolve();
          }
          waiters.add(done);
        });
      }
      return received.slice(0, n);
    },
    close: stop,
  };
}
