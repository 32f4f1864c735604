/**
 * The logins of auth entities' users by password (`login`), by mailed code
 * (`login-otp`) and by TOTP code (`login-totp`, a second factor only):
 * each proves who the user is its own way, then completes in
 * complete_login.ts. A login that carries an `mfa_id` counts against it
 * before its credential is checked (5 end it).
 *
 * @module
 */

import type { Storage } from "../db/storage.ts";
import { unlinkUser } from "./oauth2/links.ts";
import { invalidFields, MoonbaseError } from "../errors.ts";
import type { Entity } from "../records/entity.ts";
import { authOptions } from "../schema/auth_options.ts";
import { completeLogin, type LoginServices } from "./complete_login.ts";
import { mfaIdOf } from "./mfa.ts";
import type { OtpCodes } from "./otp.ts";
import type { LoginResult } from "./sessions.ts";
import { codeOf } from "./totp_enrollment.ts";

/** What the sign-in methods use (a `Core` is one). */
export interface SignInServices extends LoginServices {
  readonly otp: OtpCodes;
  readonly storage: Storage;
}

/** `login {identity, password, mfa_id?}`. */
export async function passwordLogin(
  services: SignInServices,
  entity: Entity,
  body: Record<string, unknown>,
): Promise<LoginResult> {
  refuseDisabled(entity, "password");
  const mfaId = mfaIdOf(body);
  const checked = await countingMfa(
    services,
    entity,
    mfaId,
    () => services.sessions.checkPassword(entity, body),
  );
  return await completeLogin(services, entity, checked.user, "password", {
    mfaId,
    gen: checked.gen,
  });
}

/** `login-otp {otp_id, code, mfa_id?}`: a user who proves the code proved the email (it becomes verified). */
export async function otpLogin(
  services: SignInServices,
  entity: Entity,
  body: Record<string, unknown>,
): Promise<LoginResult> {
  const mfaId = mfaIdOf(body);
  const user = await countingMfa(services, entity, mfaId, async () => {
    const used = await services.otp.use(entity, body.otp_id, body.code);
    const user = await entity.read(used.userId);
    // Dead after an email or password change (or the user's deletion).
    if (
      !user || user.email !== used.email ||
      await services.sessions.lastCutoff(entity, used.userId) > used.created
    ) {
      throw new MoonbaseError(
        "unauthenticated",
        "Cannot log in: invalid or expired code",
      );
    }
    if (user.verified === true) return user;
    const verified = await entity.update(used.userId, { verified: true });
    // The address is proven: identities linked while it was not lose their way in.
    await unlinkUser(services.storage, entity.id, used.userId);
    return verified ?? user;
  });
  return await completeLogin(services, entity, user, "otp", { mfaId });
}

/** `login-totp {mfa_id, code}`: the second login of a user enrolled in TOTP. */
export async function totpLogin(
  services: SignInServices,
  entity: Entity,
  body: Record<string, unknown>,
): Promise<LoginResult> {
  refuseDisabled(entity, "totp");
  const mfaId = mfaIdOf(body);
  if (mfaId === undefined) {
    throw invalidFields(
      { mfa_id: { code: "required", message: "Missing mfa_id" } },
      "Cannot log in: a TOTP code is a second factor; log in by another method first and send its mfa_id",
    );
  }
  const code = codeOf(body.code);
  // Counted before the code is checked (as countingMfa does).
  const first = await services.mfa.attempt(entity, mfaId);
  const user = await entity.read(first.userId);
  if (!user || !await services.totp.accept(entity, first.userId, code)) {
    throw new MoonbaseError(
      "unauthenticated",
      "Cannot log in: invalid or used TOTP code",
    );
  }
  return await completeLogin(services, entity, user, "totp", { mfaId });
}

/**
 * Runs a credential check of a login that may carry an `mfa_id`: the
 * attempt is counted against the `mfa_id` first (mfa.ts `attempt`, 401 when
 * it is spent), then the check runs. Every method's
 * check goes through here (the OAuth2 sign-in's too), so 5 logins end an
 * `mfa_id` however many run at once.
 */
export async function countingMfa<T>(
  services: SignInServices,
  entity: Entity,
  mfaId: string | undefined,
  check: () => Promise<T>,
): Promise<T> {
  if (mfaId !== undefined) await services.mfa.attempt(entity, mfaId);
  return await check();
}

/** 403 when the entity does not offer `method`. */
function refuseDisabled(entity: Entity, method: "password" | "totp"): void {
  if (!authOptions(entity.schema)[method].enabled) {
    throw new MoonbaseError(
      "forbidden",
      `Cannot log in by ${method}: it is not enabled for ${entity.name} (an admin sets auth.${method}.enabled in the schema)`,
    );
  }
}
