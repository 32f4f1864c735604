/**
 * Admin-account rules that span records: the last admin stays.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { Entity } from "../records/entity.ts";

/**
 * Deletes an admin unless it is the last one (decided inside the delete
 * transaction, with the admin rows locked on PostgreSQL). Returns false when
 * no such admin exists.
 *
 * @example
 * ```ts ignore
 * await removeAdmin(app.schemas.get("mb_admins")!, id);
 * ```
 */
export async function removeAdmin(
  admins: Entity,
  id: string,
): Promise<boolean> {
  const removed = await admins.records.remove(id, {
    access: {
      check: async (_record, tx) => {
        const rows = await tx.query(
          `SELECT "id" FROM "mb_admins"${admins.dialect.forUpdate}`,
        );
        if (rows.length <= 1) {
          throw new MoonbaseError(
            "conflict",
            "Cannot delete admin: it is the last admin",
          );
        }
      },
    },
  });
  return removed !== undefined;
}
