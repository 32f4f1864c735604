import assert from "node:assert/strict";
import { defaultAuthOptions } from "../../../lib/schema/auth_options.ts";
import type { AuthOptions } from "../../../lib/schema/auth_types.ts";
import {
  authBody,
  authChanged,
  authForm,
  enabledMethods,
  newProvider,
  templateOf,
} from "./auth_form.ts";

function withProvider(): AuthOptions {
  const a = defaultAuthOptions();
  a.oauth2.providers = [{
    name: "corp",
    display_name: "Corp SSO",
    issuer: "https://id.corp.example",
    preset: "",
    client_id: "moon",
    client_secret: "",
    scopes: ["openid", "email"],
  }];
  // As the schemas API shows it.
  Object.assign(a.oauth2.providers[0], { client_secret_set: true });
  return a;
}

Deno.test("auth form: the saved object round-trips unchanged", () => {
  for (const a of [defaultAuthOptions(), withProvider()]) {
    const f = authForm(a);
    assert.equal(authChanged(a, f), false);
  }
});

Deno.test("auth form: a saved secret is kept unless typed or removed", () => {
  const a = withProvider();
  const f = authForm(a);
  assert.equal(f.oauth2.providers[0].secret_set, true);
  assert.equal("client_secret" in authBody(f).oauth2.providers[0], false);
  f.oauth2.providers[0].client_secret = "s3cret";
  assert.equal(authBody(f).oauth2.providers[0].client_secret, "s3cret");
  f.oauth2.providers[0].clear_secret = true;
  assert.equal(authBody(f).oauth2.providers[0].client_secret, null);
  assert.equal(authChanged(a, f), true);
});

Deno.test("auth form: issuer or preset, scopes split, numbers as typed", () => {
  const f = authForm(defaultAuthOptions());
  f.otp.duration = "abc";
  f.oauth2.providers = [{
    ...newProvider(),
    name: "g",
    kind: "preset",
    issuer: "https://left.over",
    preset: "github",
    client_id: "id",
    scopes: " read:user,  user:email ",
  }];
  const b = authBody(f);
  assert.equal(b.otp.duration, "abc");
  assert.deepEqual(b.oauth2.providers[0], {
    name: "g",
    display_name: "",
    issuer: "",
    preset: "github",
    client_id: "id",
    scopes: ["read:user", "user:email"],
  });
});

Deno.test("auth form: methods turned on, template of an error path", () => {
  const f = authForm(defaultAuthOptions());
  assert.deepEqual(enabledMethods(f), ["password"]);
  f.totp = true;
  assert.deepEqual(enabledMethods(f), ["password", "TOTP"]);
  assert.equal(templateOf("auth.templates.otp.subject"), "otp");
  assert.equal(templateOf("auth.otp.length"), undefined);
});
