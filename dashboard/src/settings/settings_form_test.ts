import assert from "node:assert/strict";
import type { PublicSettings } from "../../../lib/settings/types.ts";
import {
  settingsChanged,
  settingsErrors,
  settingsForm,
  settingsPatch,
} from "./settings_form.ts";

const SAVED: PublicSettings = {
  app: { name: "Notes", url: "https://notes.example.com" },
  mail: {
    from: { name: "Notes", address: "no@notes.example.com" },
    smtp: {
      host: "smtp.example.com",
      port: 587,
      security: "starttls",
      username: "notes",
      password: "",
      password_set: true,
    },
  },
  backups: { cron: "", keep: 7 },
};

Deno.test("settings form: the saved password is kept unless typed or removed", () => {
  const f = settingsForm(SAVED);
  assert.equal(f.password, "");
  assert.equal("password" in settingsPatch(f).mail.smtp, false);
  assert.equal(
    settingsPatch({ ...f, password: "new-one" }).mail.smtp.password,
    "new-one",
  );
  assert.equal(
    settingsPatch({ ...f, password: "x", clearPassword: true }).mail.smtp
      .password,
    null,
  );
});

Deno.test("settings form: a port that is no number goes as typed", () => {
  const f = settingsForm(SAVED);
  assert.equal(settingsPatch({ ...f, port: " 2525 " }).mail.smtp.port, 2525);
  assert.equal(settingsPatch({ ...f, port: "25x" }).mail.smtp.port, "25x");
});

Deno.test("settings form: changed only when an input differs", () => {
  const f = settingsForm(SAVED);
  assert.equal(settingsChanged(SAVED, f), false);
  assert.equal(settingsChanged(SAVED, { ...f, host: "other" }), true);
  assert.equal(settingsChanged(SAVED, { ...f, password: "p" }), true);
});

Deno.test("settings form: server errors land on their inputs", () => {
  const e = settingsErrors({
    "mail.smtp.port": { message: "Must be 1-65535" },
    "mail.other": { message: "Unknown key" },
  });
  assert.deepEqual(e.byInput, { port: "Must be 1-65535" });
  assert.deepEqual(e.rest, ["mail.other: Unknown key"]);
});
