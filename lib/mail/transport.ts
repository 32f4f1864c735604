/**
 * One message to the SMTP server of the settings, through nodemailer
 * (docs/internals/dependencies.md), within a bounded time: connection, greeting and
 * socket timeouts, plus a deadline over the whole exchange.
 *
 * @module
 */

import type { Settings } from "../settings/types.ts";
import type { RenderedMail } from "./template.ts";

/**
 * The part of nodemailer used here, typed by hand: `@types/nodemailer`
 * pulls in `@types/node`, whose declarations clash with Deno's own.
 */
interface Nodemailer {
  createTransport(options: {
    host: string;
    port: number;
    secure: boolean;
    requireTLS: boolean;
    ignoreTLS: boolean;
    auth?: { user: string; pass: string };
    connectionTimeout: number;
    greetingTimeout: number;
    socketTimeout: number;
    dnsTimeout: number;
  }): {
    sendMail(message: {
      from: { name: string; address: string };
      to: string;
      subject: string;
      text: string;
      html?: string;
      headers: Record<string, string>;
    }): Promise<unknown>;
    close(): void;
  };
}

let loading: Promise<Nodemailer> | undefined;

/**
 * nodemailer, loaded on the first send: it and the Node modules it pulls
 * in take ~15 MB of memory that a server sending no mail should not hold.
 * A failed load is not kept, so the next send tries again.
 */
function loadNodemailer(): Promise<Nodemailer> {
  loading ??= import(
    // Full specifier, not the import map: embedders import mod.ts without it.
    // deno-lint-ignore no-import-prefix
    "npm:nodemailer@10.6.1"
  ).then(
    (m) => m.default as unknown as Nodemailer,
    (err) => {
      loading = undefined;
      throw err;
    },
  );
  return loading;
}

/** Why a send failed, as the SMTP server or the network said it. */
export class SendFailure extends Error {
  /** The server refused for good (a 5xx reply): retrying will not help. */
  readonly permanent: boolean;

  /** `reason`: the server's reply or the network error. */
  constructor(reason: string, permanent: boolean) {
    super(reason);
    this.name = "SendFailure";
    this.permanent = permanent;
  }
}

/** Time limits of one send, in ms. */
export interface SendLimits {
  /** To open the connection (default 10 s). */
  connectMs: number;
  /** Of a silent socket, and for the greeting (default 15 s). */
  idleMs: number;
  /** The whole exchange (default 30 s). */
  totalMs: number;
}

/** The default time limits. */
export const SEND_LIMITS: SendLimits = {
  connectMs: 10_000,
  idleMs: 15_000,
  totalMs: 30_000,
};

/** A message with its recipient. */
export interface Envelope extends RenderedMail {
  to: string;
}

/** Sends one message; resolves once the server accepted it. */
export type SendMail = (settings: Settings, mail: Envelope) => Promise<void>;

function failureOf(err: unknown): SendFailure {
  if (err instanceof SendFailure) return err;
  const e = err as {
    response?: unknown;
    responseCode?: unknown;
    message?: unknown;
    code?: unknown;
  };
  const code = typeof e?.responseCode === "number" ? e.responseCode : 0;
  // The server's own reply when there is one ("550 5.1.1 No such user"),
  // else the network's ("connect ECONNREFUSED 127.0.0.1:2525").
  const reason = typeof e?.response === "string" && e.response
    ? e.response
    : typeof e?.message === "string" && e.message
    ? e.message
    : String(e?.code ?? err);
  return new SendFailure(reason.slice(0, 500), code >= 500 && code < 600);
}

/**
 * A sender over nodemailer with the given time limits.
 *
 * @example
 * ```ts ignore
 * await smtpSender()(settings, { to: "a@example.com", subject: "Hi", text: "Hello", html: "" });
 * ```
 */
export function smtpSender(limits: SendLimits = SEND_LIMITS): SendMail {
  return async (settings, mail) => {
    const smtp = settings.mail.smtp;
    let nodemailer: Nodemailer;
    try {
      nodemailer = await loadNodemailer();
    } catch (err) {
      throw new SendFailure(
        `cannot load the mail library: ${
          err instanceof Error ? err.message : String(err)
        }`,
        false,
      );
    }
    const transport = nodemailer.createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.security === "tls",
      requireTLS: smtp.security === "starttls",
      ignoreTLS: smtp.security === "none",
      auth: smtp.username
        ? { user: smtp.username, pass: smtp.password }
        : undefined,
      connectionTimeout: limits.connectMs,
      greetingTimeout: limits.idleMs,
      socketTimeout: limits.idleMs,
      dnsTimeout: limits.connectMs,
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new SendFailure(
              `no answer from ${smtp.host}:${smtp.port} within ${
                Math.round(limits.totalMs / 1000)
              } s`,
              false,
            ),
          ),
        limits.totalMs,
      );
    });
    try {
      await Promise.race([
        transport.sendMail({
          from: {
            name: settings.mail.from.name,
            address: settings.mail.from.address,
          },
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
          ...(mail.html ? { html: mail.html } : {}),
          headers: { "Auto-Submitted": "auto-generated" },
        }),
        deadline,
      ]);
    } catch (err) {
      throw failureOf(err);
    } finally {
      clearTimeout(timer);
      transport.close();
    }
  };
}
