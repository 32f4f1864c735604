/**
 * The router of Moonbase's routes: every route that refuses API keys
 * (lib/auth/api_keys.ts `apiKeyRefusal`: everything under `/api/v1/auth/`
 * and the admins' login, refresh and logout) answers a key with its 403
 * before its handler runs, whichever file registers it.
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import type { Handler } from "../lib/http/context.ts";
import { Router } from "../lib/http/router.ts";
import { apiKeyRefusal, isApiKeyHeader } from "../lib/auth/api_key_refusals.ts";

/** A `Router` whose key-refusing routes refuse keys first. */
export class KeyAwareRouter extends Router<Handler<Core>> {
  override add(method: string, pattern: string, handler: Handler<Core>): this {
    const refusal = apiKeyRefusal(pattern);
    if (refusal === undefined) return super.add(method, pattern, handler);
    return super.add(method, pattern, async (ctx) => {
      if (isApiKeyHeader(ctx.req.headers.get("authorization"))) {
        throw refusal();
      }
      return await handler(ctx);
    });
  }
}
