/// <reference lib="dom" />
/**
 * Entry point of the dashboard bundle (`deno task build` →
 * `dashboard/dist/app.js`).
 *
 * @module
 */

import { render } from "preact";
import { App } from "./app.tsx";
import { interceptLinks } from "./router.ts";

const root = document.getElementById("app");
if (root) {
  root.textContent = "";
  interceptLinks(document.body);
  render(<App />, root);
}
