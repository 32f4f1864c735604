/**
 * A postgres.js client ended by `endClient` leaves no timer behind, however
 * it ends: idle or with a statement running, at once (`timeout` 0) or
 * waiting for it. Before, its lifetime timer outlived `sql.end()` (the op
 * sanitizer, on here, saw it). Runs on the throwaway cluster; skipped when
 * PostgreSQL is not tested.
 *
 * @module
 */

import { DATABASES } from "../../tests/_server.ts";
import { startPostgres } from "../../tests/_pg.ts";
import { client, endClient } from "./pg_client.ts";

const ignore = !DATABASES.includes("postgres");
const url = ignore ? "" : await (await startPostgres()).createDatabase();

for (const timeout of [0, 5]) {
  Deno.test({
    name: `pg client: ended idle (timeout ${timeout}), no timer is left`,
    ignore,
    sanitizeOps: true,
    sanitizeResources: true,
    fn: async () => {
      const sql = client(url, 5);
      await sql`SELECT 1 AS ok`;
      await endClient(sql, timeout);
    },
  });
  Deno.test({
    name:
      `pg client: ended with a statement running (timeout ${timeout}), no timer is left`,
    ignore,
    sanitizeOps: true,
    sanitizeResources: true,
    fn: async () => {
      const sql = client(url, 5);
      await sql`SELECT 1 AS ok`;
      // Ended at once, it fails (CONNECTION_DESTROYED); waited for, it ends.
      const running = sql`SELECT pg_sleep(0.05)`.then(
        () => "done",
        () => "ended",
      );
      await endClient(sql, timeout);
      await running;
    },
  });
}
