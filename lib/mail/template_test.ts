import assert from "node:assert/strict";
import { renderTemplate } from "./template.ts";

const cases: {
  name: string;
  template: Parameters<typeof renderTemplate>[0];
  vars: Parameters<typeof renderTemplate>[1];
  want: Partial<ReturnType<typeof renderTemplate>>;
}[] = [
  {
    name: "every placeholder in the text body",
    template: {
      subject: "s",
      body: "{APP_NAME}|{APP_URL}|{EMAIL}|{TOKEN}|{CODE}|{ENTITY}",
      action_url: "",
    },
    vars: {
      APP_NAME: "App",
      APP_URL: "https://a.test",
      EMAIL: "e@a.test",
      TOKEN: "t",
      CODE: "123456",
      ENTITY: "users",
    },
    want: { text: "App|https://a.test|e@a.test|t|123456|users" },
  },
  {
    name: "absent values render empty, unknown placeholders stay",
    template: { subject: "s", body: "[{CODE}] {NAME} {token}", action_url: "" },
    vars: {},
    want: { text: "[] {NAME} {token}" },
  },
  {
    name: "values in the action URL are URL-encoded, APP_URL is not",
    template: {
      subject: "s",
      body: "{ACTION_URL}",
      action_url: "{APP_URL}/x?e={EMAIL}&t={TOKEN}",
    },
    vars: { APP_URL: "https://a.test/base", EMAIL: "a+b@x.test", TOKEN: "a&b" },
    want: { text: "https://a.test/base/x?e=a%2Bb%40x.test&t=a%26b" },
  },
  {
    name: "values in HTML are escaped (attributes too), text is not",
    template: {
      subject: "s",
      body: "{APP_NAME}",
      html: '<a href="{ACTION_URL}">{APP_NAME}</a>',
      action_url: "{APP_URL}/?t={TOKEN}",
    },
    vars: { APP_NAME: '<b>"A"&', APP_URL: 'https://a.test/"x', TOKEN: "1" },
    want: {
      text: '<b>"A"&',
      html:
        '<a href="https://a.test/&quot;x/?t=1">&lt;b&gt;&quot;A&quot;&amp;</a>',
    },
  },
  {
    name: "the subject is one line whatever the values hold",
    template: { subject: "Hi {EMAIL}", body: "", action_url: "" },
    vars: { EMAIL: "a@b.test\r\nBcc: x@y.test" },
    want: { subject: "Hi a@b.test Bcc: x@y.test", html: "" },
  },
  {
    name: "an ACTION_URL given wins over the template's",
    template: { subject: "s", body: "{ACTION_URL}", action_url: "{APP_URL}" },
    vars: { APP_URL: "https://a.test", ACTION_URL: "https://b.test/x" },
    want: { text: "https://b.test/x" },
  },
];

for (const c of cases) {
  Deno.test(`renderTemplate: ${c.name}`, () => {
    const got = renderTemplate(c.template, c.vars);
    for (const [k, v] of Object.entries(c.want)) {
      assert.equal(got[k as keyof typeof got], v, k);
    }
  });
}
