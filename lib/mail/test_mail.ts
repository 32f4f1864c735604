/**
 * The settings' "send test mail": one message sent now, not queued, so the
 * admin learns at once whether the SMTP server takes it.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { Logger } from "../logs/logger.ts";
import { emailOrEmpty, isObject } from "../schema/shape.ts";
import { mailReady, type Settings } from "../settings/types.ts";
import { renderTemplate } from "./template.ts";
import { SendFailure, type SendMail } from "./transport.ts";

/** The test message's template. */
const TEST_TEMPLATE = {
  subject: "{APP_NAME}: test mail",
  body:
    "This is a test mail from {APP_NAME} ({APP_URL}).\n\nIf you can read it, mail works.\n",
  action_url: "",
};

/**
 * Sends the test mail to `body.to`: resolves once the SMTP server accepted
 * it; 400 for a bad address or unset mail settings; 502 with the server's
 * reason when it refused or could not be reached (within the send's time
 * limits).
 */
export async function sendTestMail(
  settings: Settings,
  send: SendMail,
  log: Logger,
  body: unknown,
): Promise<void> {
  const to = isObject(body) ? body.to : undefined;
  const checked = emailOrEmpty(to);
  if (!checked.ok || to === "") {
    throw new MoonbaseError(
      "invalid",
      "Cannot send test mail: `to` must be an email address",
      {
        fields: {
          to: {
            code: "invalid_email",
            message: "Must be a valid email address",
          },
        },
      },
    );
  }
  if (!mailReady(settings)) {
    throw new MoonbaseError(
      "invalid",
      "Cannot send test mail: set mail.smtp.host and mail.from.address in the settings first",
    );
  }
  const mail = renderTemplate(TEST_TEMPLATE, {
    APP_NAME: settings.app.name,
    APP_URL: settings.app.url,
  });
  const what = { purpose: "test", entity: "", to: String(to) };
  try {
    await send(settings, { ...mail, to: String(to) });
  } catch (err) {
    const reason = err instanceof SendFailure
      ? err.message
      : err instanceof Error
      ? err.message
      : String(err);
    log.warn("mail not sent", { ...what, error: reason });
    throw new MoonbaseError(
      "bad_gateway",
      `Cannot send test mail: ${reason}`,
    );
  }
  log.info("mail sent", what);
}
