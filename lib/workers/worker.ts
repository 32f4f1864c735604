/**
 * The entry of a serving worker (`serve --workers N`): builds its own app on
 * the main isolate's config and listens on the shared port, until told to
 * stop. An uncaught error ends it; the main isolate then stops the process
 * (supervisor.ts).
 *
 * @module
 */

import { type App, createApp } from "../../mod.ts";
import { keepServing, serveIsolate } from "./serve.ts";
import type { FromWorker, ToWorker } from "./messages.ts";

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<ToWorker>) => void) | null;
  postMessage(message: FromWorker): void;
};

let app: App | undefined;
let server: Deno.HttpServer<Deno.NetAddr> | undefined;

async function start(
  m: Extract<ToWorker, { kind: "start" }>,
): Promise<FromWorker> {
  try {
    app = await createApp(m.config);
    keepServing(app);
    server = serveIsolate(app, {
      port: m.port,
      hostname: m.hostname,
      shared: true,
    });
    return { kind: "ready" };
  } catch (err) {
    await app?.close().catch(() => {});
    app = undefined;
    return {
      kind: "failed",
      message: err instanceof Error ? err.message : String(err),
    };
  }
}

scope.onmessage = async (e) => {
  const m = e.data;
  if (m.kind === "start") scope.postMessage(await start(m));
  else if (m.kind === "stop") {
    if (app && server) await app.stop(server, m.timeoutMs).catch(() => {});
    scope.postMessage({ kind: "stopped" });
  }
};
