/**
 * The Storage contract (tests/_storage_contract.ts) against SQLite (a temp
 * file) and PostgreSQL (a fresh database of the throwaway cluster, with a
 * pool of a few connections and with a single one: then every statement
 * waits for a transaction to release it, the way SQLite does, and a
 * transaction that failed must have given its connection back for the next
 * case to run at all). Closing does not depend on the pool's size: it runs
 * once on PostgreSQL.
 *
 * @module
 */

import { runStorageContract } from "./_storage_contract.ts";
import { hasPostgres, startPostgres } from "./_pg.ts";
import { SqliteStorage } from "../lib/db/sqlite.ts";
import { PostgresStorage } from "../lib/db/postgres.ts";

const only = Deno.env.get("MB_TEST_DB");

runStorageContract("sqlite", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mb_contract_" });
  const storage = new SqliteStorage(`${dir}/contract.db`);
  return {
    storage,
    async close() {
      await storage.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}, { ignore: only !== undefined && only !== "sqlite" });

for (const [label, size] of [["", 4], [", one connection", 1]] as const) {
  runStorageContract(`postgres${label}`, async () => {
    const url = await (await startPostgres()).createDatabase();
    const storage = new PostgresStorage(url, size);
    await storage.connect();
    return { storage, close: () => storage.close() };
  }, {
    ignore: !hasPostgres() || (only !== undefined && only !== "postgres"),
    closing: size > 1,
  });
}
