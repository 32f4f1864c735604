/**
 * `deno task cluster [--instances 3] [--port 8080]`: three Moonbase instances
 * on one throwaway PostgreSQL database and one S3 bucket (Ceph's radosgw),
 * behind nginx, round-robin — the setup tests/cluster_test.ts drives (the
 * harness is tests/_cluster.ts). It prints the addresses and the admin, and
 * runs until Ctrl-C; then (or whenever this process ends) everything it
 * started stops and its files are removed.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { CLUSTER_ADMIN, hasNginx, startCluster } from "../tests/_cluster.ts";
import { hasPostgres } from "../tests/_pg.ts";
import { hasS3 } from "../tests/_s3.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    instances: { type: "string", default: "3" },
    port: { type: "string", default: "0" },
  },
});
const missing = [
  hasNginx() ? "" : "nginx (apt-get install nginx)",
  hasPostgres() ? "" : "PostgreSQL 15 (apt-get install postgresql-15)",
  hasS3() ? "" : "Ceph's radosgw (apt-get install radosgw ceph-mon ceph-osd)",
].filter(Boolean);
if (missing.length) {
  console.error(`Cannot start the cluster: install ${missing.join(", ")}`);
  Deno.exit(2);
}
const instances = Number(values.instances);
const port = Number(values.port);
if (!Number.isInteger(instances) || instances < 1 || instances > 16) {
  console.error("Cannot start the cluster: --instances is 1 to 16");
  Deno.exit(2);
}
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error("Cannot start the cluster: --port is 0 to 65535");
  Deno.exit(2);
}
console.log("Starting PostgreSQL, radosgw, the instances and nginx…");
const cluster = await startCluster({ instances, port: port || undefined });
console.log(`nginx (round-robin):  ${cluster.url}   dashboard: ${cluster.url}/mb
instances:            ${cluster.instances.map((i) => i.url).join("  ")}
admin:                ${CLUSTER_ADMIN.email} / ${CLUSTER_ADMIN.password}
PostgreSQL:           ${cluster.connection}
files:                ${cluster.files}
logs, nginx.conf:     ${cluster.dir}
Ctrl-C stops everything.`);
const stop = async () => {
  console.log("Stopping…");
  await cluster.close();
  Deno.exit(0);
};
Deno.addSignalListener("SIGINT", stop);
Deno.addSignalListener("SIGTERM", stop);
