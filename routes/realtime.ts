/**
 * Realtime routes: `GET /api/v1/realtime` (Server-Sent Events) and
 * `GET /api/v1/realtime/ws` (WebSocket). Both take the token as
 * `Authorization: Bearer` or `?token=`; the WebSocket also in its first
 * message.
 *
 * @module
 */

import type { RouteTarget } from "../lib/http/route_group.ts";
import type { Core } from "../lib/core.ts";
import { MoonbaseError } from "../lib/errors.ts";
import { statusOf } from "../lib/http/envelope.ts";
import type { Context, Handler } from "../lib/http/context.ts";
import { type SocketUpgrade, upgradeWebSocket } from "../lib/http/server.ts";
import { type AuthValue, GUEST } from "../lib/caller.ts";
import type { TokenClaims } from "../lib/auth/jwt.ts";
import { clientKey } from "../lib/auth/client_key.ts";
import type { Realtime } from "../lib/realtime/service.ts";
import { Subscriber } from "../lib/realtime/subscriber.ts";
import { SseSink } from "../lib/realtime/sse.ts";
import {
  checkTopics,
  parseTopics,
  topicsParam,
} from "../lib/realtime/topics.ts";
import {
  MAX_CLIENT_MESSAGE,
  MAX_WAITING_MESSAGES,
  parseClientMessage,
  topicKeys,
  WsSink,
} from "../lib/realtime/ws.ts";

/** What these routes read of the app: realtime, callers and the instance sync. */
export type RealtimeHost = Pick<
  Core,
  "config" | "realtime" | "schemas" | "sessions" | "sync"
>;

/** A caller of a realtime route. */
interface Caller {
  auth: AuthValue;
  claims: TokenClaims | undefined;
}

function realtimeOf(core: RealtimeHost): Realtime {
  if (!core.realtime) {
    throw new MoonbaseError(
      "not_found",
      "Cannot subscribe: realtime is off on this server (--realtime false)",
    );
  }
  return core.realtime;
}

/** Resolves a token (header, `?token=`, or a WebSocket message's) into a caller. */
function callerOf(core: RealtimeHost, token: string | null): Promise<Caller> {
  if (token === null || token === "") return Promise.resolve(GUEST_CALLER);
  return core.sessions.caller(
    /^Bearer\s/i.test(token) ? token : `Bearer ${token}`,
  );
}

/** How long a WebSocket without a caller may stay silent (ms). */
const FIRST_MESSAGE_MS = 10_000;

const GUEST_CALLER: Caller = { auth: GUEST, claims: undefined };

/** The HTTP status an error answers with (`fallback` when it is no MoonbaseError). */
function statusOfError(err: unknown, fallback: number): number {
  return err instanceof MoonbaseError
    ? err.status ?? statusOf(err.code)
    : fallback;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function presented(ctx: Context<RealtimeHost>): string | null {
  return ctx.req.headers.get("authorization") ??
    ctx.url.searchParams.get("token");
}

const sse: Handler<RealtimeHost> = async (ctx) => {
  const core = ctx.app;
  const rt = realtimeOf(core);
  const caller = await callerOf(core, presented(ctx));
  const ip = ctx.ip;
  const topics = parseTopics(
    topicsParam(ctx.url.searchParams.get("topics")),
    rt.hub.limits.maxTopics,
  );
  checkTopics(core.schemas, topics, caller.auth);
  const last = ctx.req.headers.get("last-event-id") ??
    ctx.url.searchParams.get("lastEventId") ?? undefined;
  const box: { sub?: Subscriber } = {};
  const sink = new SseSink(rt.env.bufferBytes, () => {
    if (box.sub) rt.hub.leave(box.sub);
  });
  const sub = box.sub = new Subscriber(
    caller.auth,
    caller.claims,
    clientKey(ip),
    sink,
  );
  await rt.open(sub, topics);
  // The stream starts now; the subscription (and a resume, paced by the
  // client's reading) fills it.
  rt.hub.subscribe(sub, topics, last).catch((err) => {
    rt.env.onError(err);
    sink.end(503, "Cannot subscribe: the database did not answer; reconnect");
  });
  return new Response(sink.stream, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
    },
  });
};

const ws: Handler<RealtimeHost> = async (ctx) => {
  const core = ctx.app;
  const rt = realtimeOf(core);
  if (!core.config.webSocket) {
    throw MoonbaseError.withStatus(
      501,
      "Cannot open a WebSocket: this server runs without WebSocket upgrades; start it with --websocket (or use the SSE stream at /api/v1/realtime)",
    );
  }
  if (ctx.req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
    throw new MoonbaseError(
      "invalid",
      "Cannot open a WebSocket: send an Upgrade: websocket request",
    );
  }
  // A token in the URL is checked before the upgrade (a bad one is a 401).
  const fromUrl = presented(ctx);
  // Read before the upgrade: the request is gone after it.
  const ip = ctx.ip;
  const fromToken = fromUrl ? await callerOf(core, fromUrl) : undefined;
  // Counted from the upgrade on (address, streams in all), not only once
  // its caller is known: a silent socket holds a connection slot too.
  let admitted = rt.hub.admit(clientKey(ip));
  const release = () => {
    rt.hub.release(admitted);
    admitted = [];
  };
  let upgrade: SocketUpgrade;
  try {
    // A longer message is refused from its frame header (1009).
    upgrade = upgradeWebSocket(ctx.req, {
      idleTimeout: 30,
      maxMessageBytes: MAX_CLIENT_MESSAGE,
    });
  } catch {
    release();
    throw new MoonbaseError(
      "invalid",
      "Cannot open a WebSocket: the upgrade request is incomplete (Connection: Upgrade and Sec-WebSocket-Key/Version are required)",
    );
  }
  const { socket, response } = upgrade;
  let sub: Subscriber | undefined;
  const sink = new WsSink(socket, rt.env.bufferBytes, () => {
    if (sub) rt.hub.leave(sub);
  });
  const join = (caller: Caller): Subscriber => {
    const joined = new Subscriber(
      caller.auth,
      caller.claims,
      clientKey(ip),
      sink,
    );
    // The admitted keys now belong to the subscriber (`leave` gives them).
    rt.hub.join(joined, admitted);
    admitted = [];
    return joined;
  };
  /** The connection's caller: from the URL, else the first valid message. */
  const identify = async (token: string | undefined): Promise<Subscriber> => {
    try {
      return join(
        token === undefined ? GUEST_CALLER : await callerOf(core, token),
      );
    } catch (err) {
      // No caller, no connection: a bad token (401) or a limit (429, 503).
      sink.end(statusOfError(err, 401), messageOf(err));
      throw err;
    }
  };
  let messages = 0;
  const handle = async (data: unknown) => {
    const m = parseClientMessage(data);
    const first = messages++ === 0;
    // A token: in the first message only (the URL's again, at most).
    if (
      sub && m.token !== undefined && !(first && m.token === fromUrl)
    ) {
      throw new MoonbaseError(
        "invalid",
        "Cannot authenticate: a token goes in the URL or the first message only",
      );
    }
    const s = sub ??= await identify(m.token);
    // Closed while the token was checked.
    if (socket.readyState !== WebSocket.OPEN) return rt.hub.leave(s);
    if (m.type === "auth") return s.sink.ready(topicKeys(s), false);
    const topics = parseTopics(m.topics, rt.hub.limits.maxTopics);
    if (m.type === "unsubscribe") {
      rt.hub.unsubscribe(s, topics.map((t) => t.key));
      return s.sink.ready(topicKeys(s), false);
    }
    // A message is no request: catch up with the other workers here too.
    await core.sync.fresh();
    checkTopics(core.schemas, topics, s.auth);
    await rt.hub.subscribe(s, topics, m.lastEventId);
  };
  // Without a token in the URL, the first message must come soon.
  let firstMessage: ReturnType<typeof setTimeout> | undefined;
  socket.onopen = () => {
    firstMessage = setTimeout(() => {
      if (!sub) {
        sink.end(408, "Cannot wait: send the first message within 10 s");
      }
    }, FIRST_MESSAGE_MS);
    Deno.unrefTimer(firstMessage);
    if (!fromToken || sub) return;
    try {
      sub = join(fromToken);
    } catch (err) {
      sink.end(statusOfError(err, 429), messageOf(err));
    }
  };
  // One message at a time, in order; a refused message changes nothing.
  // A client that sends faster than its messages are handled is read no
  // further until they are (where the socket cannot pause: closed).
  let chain = Promise.resolve();
  let waiting = 0;
  socket.onmessage = (e) => {
    if (sink.closed) return;
    if (++waiting >= MAX_WAITING_MESSAGES) {
      if (!socket.pause) {
        sink.end(
          429,
          `Cannot keep up: more than ${MAX_WAITING_MESSAGES} messages wait to be handled; wait for each reply`,
        );
        return;
      }
      socket.pause();
    }
    chain = chain.then(() => {
      if (--waiting < MAX_WAITING_MESSAGES / 2) socket.resume?.();
      if (sink.closed) return;
      return handle(e.data).catch((err) => {
        if (!sink.closed) sink.error(err);
      });
    });
  };
  socket.onclose = () => {
    clearTimeout(firstMessage);
    if (sub) rt.hub.leave(sub);
    release();
  };
  return response;
};

/** Registers the realtime routes. */
export function realtimeRoutes(r: RouteTarget<RealtimeHost>): void {
  r.add("GET", "/api/v1/realtime", sse);
  r.add("GET", "/api/v1/realtime/ws", ws);
}
