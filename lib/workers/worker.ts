/**
 * The entry of a serving worker (`serve --workers N`): builds its own app on
 * the main isolate's config and listens on the shared port, until told to
 * stop. An uncaught error ends it; the main isolate then stops the process
 * (supervisor.ts).
 *
 * @module
 */

import { createApp } from "../../mod.ts";
import { type InternalApp, internalApp } from "../internal_app.ts";
import { keepServing, serveIsolate } from "./serve.ts";
import type { FromWorker, ToWorker } from "./messages.ts";

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<ToWorker>) => void) | null;
  postMessage(message: FromWorker): void;
};

let app: InternalApp | undefined;
let server: Deno.HttpServer<Deno.NetAddr> | undefined;

async function start(
  m: Extract<ToWorker, { kind: "start" }>,
): Promise<FromWorker> {
  try {
    app = internalApp(await createApp(m.config));
    keepServing(app);
    server = serveIsolate(app, {
      port: m.port,
      hostname: m.hostname,
      shared: true,
    });
    return { kind: "ready" };
  } catch (err) {
    // The start's error is what the main isolate reports; a half-built app
    // that also fails to close adds nothing it could act on.
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
    if (app && server) {
      const index = app.config.peers?.index;
      // Still stopped (the main isolate ends the worker next), but said: the
      // app's log may be closed by now, stderr is not.
      await app.stop(server, m.timeoutMs).catch((err) =>
        console.error(
          `moonbase: worker ${index}: Cannot stop cleanly: ${
            err instanceof Error ? err.message : String(err)
          }`,
        )
      );
    }
    scope.postMessage({ kind: "stopped" });
  }
};
