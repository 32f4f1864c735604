/**
 * `POST /api/v1/batch`: record writes in one transaction
 * (lib/records/batch.ts), sent as JSON or as multipart with files.
 *
 * @module
 */

import type { RouteTarget } from "../lib/http/route_group.ts";
import type { Core } from "../lib/core.ts";
import { mediaType } from "../lib/http/body.ts";
import { readMultipartBatch } from "../lib/files/batch_upload.ts";
import { parseBatch } from "../lib/records/batch_input.ts";
import { AfterCommitFailure } from "../lib/records/batch.ts";

/** What the batch route reads of the app. */
export type BatchHost = Pick<
  Core,
  "batches" | "records" | "bodies" | "config" | "files" | "sync"
>;

/** Registers the batch route. */
export function batchRoutes(r: RouteTarget<BatchHost>): void {
  r.add("POST", "/api/v1/batch", async (ctx) => {
    const { batches, records, config } = ctx.app;
    const auth = await ctx.auth();
    const input = mediaType(ctx.req) === "multipart/form-data"
      ? await readMultipartBatch(
        ctx.req,
        (name) => records.entity(name),
        ctx.app.files,
        {
          maxRequests: batches.limits.maxRequests,
          maxUpload: config.maxUploadSize,
          maxJson: config.maxBodySize,
        },
        ctx.app.bodies,
      )
      : {
        calls: parseBatch(await ctx.body(), batches.limits.maxRequests),
        files: undefined,
        cleanup: () => Promise.resolve(),
      };
    try {
      await ctx.app.sync.fresh(); // another isolate's change, with --workers
      const out = await batches.run(input.calls, auth, ctx, input.files);
      return ctx.json(200, out.answers, out.headers);
    } catch (err) {
      // After the commit the files belong to the batch's records.
      if (err instanceof AfterCommitFailure) throw err.cause;
      await input.cleanup();
      throw err;
    }
  });
}
