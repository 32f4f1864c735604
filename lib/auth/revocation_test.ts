import { assertEquals } from "../../tests/_server.ts";
import type { Row, Storage } from "../db/storage.ts";
import { Revocations } from "./revocation.ts";
import type { TokenClaims } from "./jwt.ts";

/** A storage whose cutoff reads answer late, with what the table held when they began. */
function slowStore(table: Row[]) {
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const store = {
    query: async (sql: string) => {
      if (!sql.includes("mb_cutoffs")) return [];
      const snapshot = table.map((r) => ({ ...r }));
      await gate;
      return snapshot;
    },
    run: (_sql: string, params: unknown[]) => {
      table.push({
        key: params[0],
        cutoff: params[1],
        keep_jti: params[2],
        created: params[3],
      });
      return Promise.resolve(1);
    },
  } as unknown as Storage;
  return { store, release };
}

const uuidAt = (ms: number) => {
  const hex = ms.toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8)}-7000-8000-000000000000`;
};
const claims = (jti: string): TokenClaims => ({
  sub: "u1",
  entity: "users",
  jti,
  iat: 0,
  exp: 2 ** 31,
});

Deno.test("revocation: a poll that read older cutoffs does not undo a newer one", async () => {
  const now = Date.now();
  const kept = uuidAt(now - 1000);
  // An earlier password change kept `kept` alive.
  const table: Row[] = [{
    key: "users/u1",
    cutoff: now - 500,
    keep_jti: kept,
    created: now - 500,
  }];
  const { store, release } = slowStore(table);
  const rev = new Revocations(store);
  const polling = rev.poll(true);
  await new Promise((r) => setTimeout(r, 0)); // it has read the cutoffs
  await rev.revokeUser("users", "u1"); // a newer change keeps nothing
  release();
  await polling;
  assertEquals(
    rev.isRevoked(claims(kept)),
    true,
    "the kept token of the old cutoff",
  );
  assertEquals(rev.isRevoked(claims(uuidAt(now - 100))), true);
  assertEquals(rev.isRevoked(claims(uuidAt(Date.now() + 1000))), false);
});
