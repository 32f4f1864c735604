/**
 * The app's settings (docs/guide/settings-and-mail.md): what every instance on
 * the database shares, edited by admins through `/api/v1/sys/settings`.
 *
 * @module
 */

/** How the SMTP connection is secured. */
export type SmtpSecurity = "starttls" | "tls" | "none";

/** The SMTP server mail goes out through. */
export interface SmtpSettings {
  /** Host name or address; "" while mail is not set up. */
  host: string;
  port: number;
  /** `starttls`: upgrade required; `tls`: TLS from the start; `none`: plain. */
  security: SmtpSecurity;
  /** "" for no authentication. */
  username: string;
  /** Write-only (answers show "" and `password_set`). */
  password: string;
}

/** The settings as stored (secrets included). */
export interface Settings {
  app: { name: string; url: string };
  mail: {
    from: { name: string; address: string };
    smtp: SmtpSettings;
  };
  /** Scheduled backups (lib/backup/schedule.ts): `cron` "" is off. */
  backups: { cron: string; keep: number };
}

/** The SMTP security values. */
export const SMTP_SECURITY: readonly SmtpSecurity[] = [
  "starttls",
  "tls",
  "none",
];

/** The settings of a fresh database. */
export function defaultSettings(): Settings {
  return {
    app: { name: "Moonbase", url: "http://localhost:7070" },
    mail: {
      from: { name: "Moonbase", address: "" },
      smtp: {
        host: "",
        port: 587,
        security: "starttls",
        username: "",
        password: "",
      },
    },
    backups: { cron: "", keep: 7 },
  };
}

/** The settings as admins read them: secrets "" with `<key>_set`. */
export interface PublicSettings {
  app: Settings["app"];
  mail: {
    from: Settings["mail"]["from"];
    smtp: SmtpSettings & { password_set: boolean };
  };
  backups: Settings["backups"];
}

/** True when mail can go out: an SMTP host and a sender address. */
export function mailReady(s: Settings): boolean {
  return s.mail.smtp.host !== "" && s.mail.from.address !== "";
}

/** The settings as admins read them: secrets "" with `<key>_set`. */
export interface PublicSettings {
  app: Settings["app"];
  mail: {
    from: Settings["mail"]["from"];
    smtp: SmtpSettings & { password_set: boolean };
  };
  backups: Settings["backups"];
}
