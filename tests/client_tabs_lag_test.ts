/**
 * Two tabs of a browser share the session in `localStorage`, but a tab may
 * see the other's write late (Chromium caches it in each tab's process):
 * a tab whose token the server refuses because the other tab's refresh
 * revoked it waits for the successor instead of logging out. The tab is a
 * `LocalAuthStore` over a storage view that lags; the calls are stand-ins
 * answering 401 to the revoked token, the realtime stream a real server's.
 */

import { assertEquals, forEachDb, startServer } from "./_server.ts";
import { makeEntity, OPEN, userOf } from "./_extend_fixtures.ts";
import { pause, poll } from "./_wait.ts";
import { jtiOf, streamJtis } from "./_realtime_client.ts";
import { LocalAuthStore } from "../client/src/auth_store.ts";
import { Moonbase } from "../client/src/client.ts";
import { MoonbaseError } from "../client/src/errors.ts";
import { Refresher } from "../client/src/session.ts";
import type { AuthResult } from "../client/src/types.ts";

const KEY = "mb_lag_test";

function token(n: number, sub = "u1"): string {
  const now = Math.floor(Date.now() / 1000);
  const body = btoa(JSON.stringify({
    sub,
    entity: "users",
    n,
    iat: now,
    exp: now + 3600,
  })).replace(/=+$/, "");
  return `h.${body}.s`;
}

/** One tab's view of `localStorage`: another tab's write shows on `deliver()`. */
class LaggingView {
  #shown = new Map<string, string>();
  #pending = new Map<string, string>();
  /** What this tab wrote. */
  readonly written: string[] = [];
  getItem(k: string): string | null {
    return this.#shown.get(k) ?? null;
  }
  setItem(k: string, v: string): void {
    this.written.push(v);
    this.#shown.set(k, v);
  }
  removeItem(k: string): void {
    this.#shown.delete(k);
  }
  /** Another tab wrote `v`; this tab does not see it yet. */
  otherTabWrote(k: string, v: string): void {
    this.#pending.set(k, v);
  }
  deliver(): void {
    for (const [k, v] of this.#pending) this.#shown.set(k, v);
    this.#pending.clear();
  }
}

/** Runs `fn` as a browser tab whose `localStorage` is `view`. */
async function inTab(
  view: LaggingView,
  fn: () => Promise<void>,
): Promise<void> {
  const g = globalThis as Record<string, unknown>;
  const had = Object.getOwnPropertyDescriptor(globalThis, "localStorage");
  Object.defineProperty(globalThis, "localStorage", {
    value: view,
    configurable: true,
  });
  g.document = {};
  try {
    await fn();
  } finally {
    delete g.document;
    delete g.localStorage;
    if (had) Object.defineProperty(globalThis, "localStorage", had);
  }
}

const session = (t: string, id = "u1") =>
  JSON.stringify({ token: t, user: { id } });

Deno.test("client tabs: a refresh refused because another tab refreshed first takes that tab's token", async () => {
  const view = new LaggingView();
  const [t1, t2] = [token(1), token(2)];
  view.setItem(KEY, session(t1));
  await inTab(view, async () => {
    const store = new LocalAuthStore(KEY);
    const heard: string[] = [];
    store.onChange((t) => heard.push(t));
    const refresher = new Refresher(
      store,
      (_path, sent): Promise<AuthResult> => {
        // The other tab refreshed t1 (revoking it) and stored t2, which
        // reaches this tab a little after the server's answer.
        assertEquals(sent, t1);
        view.otherTabWrote(KEY, session(t2));
        setTimeout(() => view.deliver(), 200);
        return Promise.reject(new MoonbaseError(401, "Token revoked"));
      },
      "lag-test",
    );
    try {
      await refresher.refresh();
      assertEquals(store.token, t2, "kept the other tab's token");
      assertEquals(heard.at(-1), t2);
      assertEquals(heard.includes(""), false, "never logged out");
    } finally {
      refresher.stop();
    }
  });
});

Deno.test("client tabs: a call refused with a token another tab replaced is sent again with the new one", async () => {
  const view = new LaggingView();
  const [t1, t2] = [token(1), token(2)];
  view.setItem(KEY, session(t1));
  await inTab(view, async () => {
    const sent: string[] = [];
    const mb = new Moonbase("http://moonbase.test", {
      store: new LocalAuthStore(KEY),
      autoRefresh: false,
      fetch: (_input, init) => {
        const auth = new Headers(init?.headers).get("authorization") ?? "";
        sent.push(auth.replace("Bearer ", ""));
        if (auth === `Bearer ${t2}`) {
          return Promise.resolve(Response.json({ data: { id: "p1" } }));
        }
        view.otherTabWrote(KEY, session(t2));
        setTimeout(() => view.deliver(), 200);
        return Promise.resolve(Response.json(
          { code: 401, message: "Token revoked", data: {} },
          { status: 401 },
        ));
      },
    });
    const got = await mb.send<{ id: string }>("GET", "/api/v1/posts/p1");
    assertEquals(got.id, "p1");
    assertEquals(sent, [t1, t2]);
    assertEquals(mb.authStore.token, t2);
  });
});

Deno.test("client tabs: a refused token with no successor is dropped once the wait ends", async () => {
  const view = new LaggingView();
  const t1 = token(1);
  view.setItem(KEY, session(t1));
  await inTab(view, async () => {
    const store = new LocalAuthStore(KEY);
    const refresher = new Refresher(
      store,
      () => Promise.reject(new MoonbaseError(401, "Token revoked")),
      "lag-test",
    );
    try {
      await refresher.refresh();
      assertEquals(store.token, "", "a revoked session ends");
      assertEquals(view.getItem(KEY), null);
    } finally {
      refresher.stop();
    }
  });
});

Deno.test("client tabs: a call refused because another tab signed in as someone else is not sent again as them", async () => {
  const view = new LaggingView();
  const [t1, other] = [token(1, "u1"), token(1, "u2")];
  view.setItem(KEY, session(t1));
  await inTab(view, async () => {
    const sent: string[] = [];
    const mb = new Moonbase("http://moonbase.test", {
      store: new LocalAuthStore(KEY),
      autoRefresh: false,
      fetch: (_input, init) => {
        const auth = new Headers(init?.headers).get("authorization") ?? "";
        sent.push(auth.replace("Bearer ", ""));
        if (auth === `Bearer ${other}`) {
          return Promise.resolve(Response.json({ data: { id: "c1" } }));
        }
        // The other tab logged u1 out (revoking t1) and u2 in; this tab
        // hears of it a little after the server's answer.
        view.otherTabWrote(KEY, session(other, "u2"));
        setTimeout(() => view.deliver(), 200);
        return Promise.resolve(Response.json(
          { code: 401, message: "Token revoked", data: {} },
          { status: 401 },
        ));
      },
    });
    const err = await mb.send("POST", "/api/v1/comments", {
      body: { text: "by u1" },
    }).then(() => undefined, (e: unknown) => e);
    assertEquals((err as MoonbaseError | undefined)?.status, 401);
    assertEquals(sent, [t1], "u1's call never ran as u2");
    assertEquals(mb.authStore.token, other, "u2's session stays");
  });
});

Deno.test("client tabs: without other tabs, a call is not sent again as a user signed in while it ran", async () => {
  const [t1, other] = [token(1, "u1"), token(1, "u2")];
  const sent: string[] = [];
  const mb: Moonbase = new Moonbase("http://moonbase.test", {
    autoRefresh: false,
    fetch: (_input, init) => {
      const auth = new Headers(init?.headers).get("authorization") ?? "";
      sent.push(auth.replace("Bearer ", ""));
      if (auth === `Bearer ${other}`) {
        return Promise.resolve(Response.json({ data: { id: "c1" } }));
      }
      mb.authStore.save(other, { id: "u2" });
      return Promise.resolve(Response.json(
        { code: 401, message: "Token revoked", data: {} },
        { status: 401 },
      ));
    },
  });
  mb.authStore.save(t1, { id: "u1" });
  const err = await mb.send("POST", "/api/v1/comments", {
    body: { text: "by u1" },
  }).then(() => undefined, (e: unknown) => e);
  assertEquals((err as MoonbaseError | undefined)?.status, 401);
  assertEquals(sent, [t1]);
  assertEquals(mb.authStore.token, other);
});

Deno.test("client tabs: a refresh that finds another tab's token takes it without writing it back", async () => {
  const view = new LaggingView();
  const [t1, t2] = [token(1), token(2)];
  view.setItem(KEY, session(t1));
  view.written.length = 0;
  await inTab(view, async () => {
    const store = new LocalAuthStore(KEY);
    const heard: string[] = [];
    store.onChange((t) => heard.push(t));
    const calls: string[] = [];
    const refresher = new Refresher(
      store,
      (_path, sent): Promise<AuthResult> => {
        calls.push(sent);
        return Promise.reject(new MoonbaseError(0, "not called"));
      },
      "lag-test",
    );
    try {
      // The other tab refreshed (its storage event not dispatched here yet).
      view.otherTabWrote(KEY, session(t2));
      view.deliver();
      await refresher.refresh();
      assertEquals(calls, [], "no refresh of the revoked token");
      assertEquals(store.token, t2);
      assertEquals(heard, [t2]);
      // A write of what was read could bring back a session the other tab
      // ended meanwhile (its removal not seen here yet).
      assertEquals(view.written, [], "nothing written back");
    } finally {
      refresher.stop();
    }
  });
});

Deno.test("client tabs: an explicit refresh refused because another tab refreshed first takes that tab's token", async () => {
  const view = new LaggingView();
  const [t1, t2] = [token(1), token(2)];
  view.setItem(KEY, session(t1));
  await inTab(view, async () => {
    const mb = new Moonbase("http://moonbase.test", {
      store: new LocalAuthStore(KEY),
      autoRefresh: false,
      fetch: () => {
        view.otherTabWrote(KEY, session(t2));
        setTimeout(() => view.deliver(), 200);
        return Promise.resolve(Response.json(
          { code: 401, message: "Token revoked", data: {} },
          { status: 401 },
        ));
      },
    });
    const heard: string[] = [];
    mb.authStore.onChange((t) => heard.push(t));
    const err = await mb.auth("users").refresh().then(
      () => undefined,
      (e: unknown) => e,
    );
    assertEquals((err as MoonbaseError | undefined)?.status, 401);
    assertEquals(mb.authStore.token, t2, "kept the other tab's token");
    assertEquals(heard.includes(""), false, "never logged out");
  });
});

forEachDb(
  "client tabs: a stream ended because another tab's refresh revoked its token reopens with that tab's token, without onError",
  async (_t, db) => {
    const s = await startServer(db);
    const view = new LaggingView();
    try {
      await makeEntity(s, { name: "people", type: "auth" });
      await makeEntity(s, {
        name: "notes",
        fields: [{ name: "title", type: "string" }],
        rules: OPEN,
      });
      const alice = await userOf(s, "people", "alice@example.com");
      view.setItem(KEY, session(alice.token));
      await inTab(view, async () => {
        const mb = new Moonbase(s.url, {
          store: new LocalAuthStore(KEY),
          autoRefresh: false,
        });
        const errors: string[] = [];
        const titles: unknown[] = [];
        try {
          await mb.entity("notes").subscribe(
            "*",
            (e) => titles.push(e.record.title),
            { onError: (e) => errors.push(e.message) },
          );
          // The other tab refreshes: the server revokes this tab's token and
          // ends its stream; the new token reaches this tab only after that.
          const r = await s.request("POST", "/api/v1/auth/people/refresh", {
            token: alice.token,
          });
          assertEquals(r.status, 200, r.text);
          view.otherTabWrote(KEY, session(r.data.token));
          await poll("the old stream to end", () => streamJtis(s).length === 0);
          setTimeout(() => view.deliver(), 200);
          await poll(
            "a stream with the other tab's token",
            () => streamJtis(s)[0] === jtiOf(r.data.token),
          );
          await s.request("POST", "/api/v1/entities/notes", {
            body: { title: "after" },
          });
          await poll("the event", () => titles.includes("after"));
          assertEquals(errors, [], "no error: the session went on");
        } finally {
          mb.close();
        }
      });
    } finally {
      await s.close();
    }
  },
);

/**
 * A stand-in realtime server: a stream per request, refused with 401 for a
 * revoked token; `end401` ends the open streams as the server's watchdog
 * does, `emit` sends an event on each open one.
 */
class FakeStreams {
  readonly revoked = new Set<string>();
  /** The token of each request, in order. */
  readonly opened: string[] = [];
  readonly #open = new Map<
    ReadableStreamDefaultController<Uint8Array>,
    string
  >();
  #ids = 0;

  /** The tokens of the streams open now (one per stream). */
  get open(): string[] {
    return [...this.#open.values()];
  }

  fetch = (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const auth = new Headers(init?.headers).get("authorization") ?? "";
    const token = auth.replace("Bearer ", "");
    this.opened.push(token);
    if (this.revoked.has(token)) {
      return Promise.resolve(Response.json(
        { code: 401, message: "Token revoked", data: {} },
        { status: 401 },
      ));
    }
    const topics = new URL(String(input)).searchParams.get("topics") ?? "";
    let ctl!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({
      start: (c) => void (ctl = c),
      cancel: () => void this.#open.delete(ctl),
    });
    this.#open.set(ctl, token);
    init?.signal?.addEventListener("abort", () => {
      this.#open.delete(ctl);
      ctl.error(new DOMException("aborted", "AbortError"));
    });
    this.#send(ctl, "ready", { topics: topics.split(",") });
    return Promise.resolve(
      new Response(body, { headers: { "content-type": "text/event-stream" } }),
    );
  };

  end401(): void {
    for (const ctl of this.#open.keys()) {
      this.#send(ctl, "error", {
        status: 401,
        error: "Cannot stay subscribed: the token was revoked",
      });
      ctl.close();
    }
    this.#open.clear();
  }

  emit(title: string): void {
    const id = String(++this.#ids);
    for (const ctl of this.#open.keys()) {
      this.#send(ctl, "create", {
        entity: "notes",
        action: "create",
        id,
        record: { id, title },
      }, id);
    }
  }

  #send(
    ctl: ReadableStreamDefaultController<Uint8Array>,
    event: string,
    data: unknown,
    id?: string,
  ): void {
    const idLine = id === undefined ? "" : `id: ${id}\n`;
    ctl.enqueue(
      new TextEncoder().encode(
        `event: ${event}\n${idLine}data: ${JSON.stringify(data)}\n\n`,
      ),
    );
  }
}

/** Another tab's write reaches this one: its `storage` event. */
function storageEvent(): void {
  const e = new Event("storage");
  Object.defineProperty(e, "key", { value: KEY });
  dispatchEvent(e);
}

Deno.test("client tabs: a stream whose successor token comes by the storage event while it waits leaves one stream open", async () => {
  const view = new LaggingView();
  const [t1, t2] = [token(1), token(2)];
  view.setItem(KEY, session(t1));
  await inTab(view, async () => {
    const fake = new FakeStreams();
    const mb = new Moonbase("http://moonbase.test", {
      store: new LocalAuthStore(KEY),
      autoRefresh: false,
      fetch: fake.fetch,
    });
    const titles: string[] = [];
    const errors: string[] = [];
    try {
      await mb.entity("notes").subscribe(
        "*",
        (e) => titles.push(String(e.record.title)),
        { onError: (e) => errors.push(e.message) },
      );
      // The other tab refreshed: t1 is revoked and its stream ended; t2
      // reaches this tab while its stream waits for a successor.
      fake.revoked.add(t1);
      fake.end401();
      await poll("the stream to end", () => !mb.realtime.connected);
      view.otherTabWrote(KEY, session(t2));
      view.deliver();
      storageEvent();
      await poll("a stream with t2", () => fake.open.includes(t2));
      // The wait notices t2 at its next look (every 50 ms): past it, a
      // stream opened for the old one would still be running beside.
      await pause(300);
      assertEquals(fake.open, [t2], "one stream");
      fake.emit("once");
      await poll("the event", () => titles.length > 0);
      await pause(50);
      assertEquals(titles, ["once"], "the event came once");
      assertEquals(errors, []);
    } finally {
      mb.close();
    }
  });
});

Deno.test("client tabs: a subscribe while a refused stream waits rejects, the other subscriptions hear it once and the token is dropped", async () => {
  const view = new LaggingView();
  const t1 = token(1);
  view.setItem(KEY, session(t1));
  await inTab(view, async () => {
    const fake = new FakeStreams();
    const mb = new Moonbase("http://moonbase.test", {
      store: new LocalAuthStore(KEY),
      autoRefresh: false,
      fetch: fake.fetch,
    });
    const errors: number[] = [];
    try {
      await mb.entity("notes").subscribe("*", () => {}, {
        onError: (e) => errors.push(e.status),
      });
      // Revoked elsewhere (a password change): no successor will come.
      fake.revoked.add(t1);
      fake.end401();
      await poll("the stream to end", () => !mb.realtime.connected);
      const err = await mb.entity("people").subscribe("*", () => {}).then(
        () => undefined,
        (e: unknown) => e,
      );
      assertEquals((err as MoonbaseError | undefined)?.status, 401);
      await poll("the token dropped", () => mb.authStore.token === "");
      await poll("a stream without a token", () => fake.open.length > 0);
      await pause(300);
      assertEquals(fake.open, [""], "one stream, signed out");
      assertEquals(errors, [401], "onError once");
      assertEquals(
        fake.opened.filter((t) => t === t1).length,
        2,
        "the refused token is not sent again",
      );
    } finally {
      mb.close();
    }
  });
});

Deno.test("client tabs: without a document, a stream refused with 401 still leaves the token its grace (another client sharing the store refreshed)", async () => {
  const view = new LaggingView();
  const [t1, t2] = [token(1), token(2)];
  view.setItem(KEY, session(t1));
  const had = Object.getOwnPropertyDescriptor(globalThis, "localStorage");
  Object.defineProperty(globalThis, "localStorage", {
    value: view,
    configurable: true,
  });
  const fake = new FakeStreams();
  const mb = new Moonbase("http://moonbase.test", {
    store: new LocalAuthStore(KEY),
    autoRefresh: false,
    fetch: fake.fetch,
  });
  try {
    const heard: string[] = [];
    mb.authStore.onChange((t) => heard.push(t));
    await mb.entity("notes").subscribe("*", () => {});
    // Another client of this process refreshed: t1 is revoked at once, the
    // answer bringing t2 is stored a moment later.
    fake.revoked.add(t1);
    fake.end401();
    await poll("the stream to end", () => !mb.realtime.connected);
    await pause(300);
    view.setItem(KEY, session(t2));
    await poll("a stream with t2", () => fake.open.includes(t2));
    assertEquals(mb.authStore.token, t2);
    assertEquals(heard.includes(""), false, "never signed out");
  } finally {
    mb.close();
    delete (globalThis as Record<string, unknown>).localStorage;
    if (had) Object.defineProperty(globalThis, "localStorage", had);
  }
});
