/**
 * `moonbase serve`: one app in the main isolate, and with `--workers N`
 * N-1 more in Web Workers of the same process, every one listening on the
 * same port (SO_REUSEPORT: the kernel spreads connections between them).
 * The main isolate does the start-up work (system tables, setup token,
 * file sweep, log pruning) before the workers start; they share its setup
 * token and tell each other of schema changes, revocations and realtime
 * events (lib/cluster/link.ts).
 *
 * SIGINT/SIGTERM drain every isolate, then the process exits 0. A worker
 * that dies stops the whole process with exit code 1.
 *
 * @module
 */

import { createApp, VERSION } from "../../mod.ts";
import { internalApp } from "../internal_app.ts";
import { type AppConfig, workerCount } from "../config.ts";
import { commandFor } from "../cli_hint.ts";
import { newPeerConfig } from "../cluster/link.ts";
import { randomToken } from "../ids.ts";
import { defaultMaxConnections } from "../http/limits.ts";
import { keepServing, needReusePort, serveIsolate } from "./serve.ts";
import { Workers } from "./supervisor.ts";

/** Serves until a signal (or a worker's death) stops the process. */
export async function serveCommand(
  config: AppConfig,
  port: number,
  host: string,
): Promise<void> {
  const count = workerCount(config.workers);
  // SO_REUSEPORT would let this process share a port another one (of the
  // same user) listens on, splitting its traffic: make sure it is free.
  if (count > 1) needReusePort();
  if (count > 1 && port !== 0) portFree(port, host);
  const peers = count > 1
    ? newPeerConfig(
      count,
      randomToken(24),
      config.maxConnections ?? defaultMaxConnections(),
    )
    : undefined;
  const app = internalApp(await createApp({ ...config, peers }));
  keepServing(app);
  for (const n of app.notices) console.error(n);
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = serveIsolate(app, { port, hostname: host, shared: count > 1 });
  } catch (err) {
    await app.close();
    throw err;
  }
  let workers: Workers | undefined;
  if (peers) {
    try {
      workers = await Workers.start({
        config,
        // The main isolate's token, or none when an admin exists.
        peers: { ...peers, setupToken: app.setupToken },
        port: server.addr.port,
        hostname: host,
      });
    } catch (err) {
      await app.stop(server, 1000);
      throw err;
    }
  }
  const shown = host === "0.0.0.0" ? "localhost" : host;
  const base = `http://${shown}:${server.addr.port}`;
  const db = app.storage.dialect.name === "sqlite"
    ? `SQLite in ${app.config.dataDir}`
    : "PostgreSQL";
  const isolates = count > 1 ? `, ${count} workers` : "";
  console.log(
    `Moonbase ${VERSION} listening on ${base} (${db}${isolates})`,
  );
  app.log.info("started", {
    version: VERSION,
    port: server.addr.port,
    database: app.storage.dialect.name,
    workers: count,
  });
  if (app.setupToken) {
    console.log(
      `No admin yet. Create one at ${base}/mb/setup?token=${app.setupToken}`,
    );
    console.log(
      `  or: ${commandFor("admins --add <email> <password>", config)}`,
    );
  }
  let stopped: Promise<void> | undefined;
  const stop = (code: number) => {
    stopped ??= Promise.all([workers?.stop(), app.stop(server)])
      .then(() => Deno.exit(code), (err) => {
        // The app's log may be closed by now: stderr, then a non-zero exit.
        console.error(
          `moonbase: Cannot stop cleanly: ${
            err instanceof Error ? err.message : String(err)
          }`,
        );
        Deno.exit(code || 1);
      });
  };
  if (workers) {
    workers.onExit = (index, message) => {
      console.error(
        `moonbase: worker ${index} died (${message}); stopping every worker`,
      );
      app.log.error("worker died", { worker: index, error: message });
      stop(1);
    };
  }
  Deno.addSignalListener("SIGINT", () => stop(0));
  Deno.addSignalListener("SIGTERM", () => stop(0));
  await server.finished;
  // The listener closes before the database and the logs do: wait for them.
  await stopped;
}

/** Throws (Deno's AddrInUse) when something listens on the port already. */
function portFree(port: number, hostname: string): void {
  Deno.listen({ port, hostname, transport: "tcp" }).close();
}
