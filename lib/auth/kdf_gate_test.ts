import { assert, assertEquals } from "../../tests/_server.ts";
import { rejection } from "../../tests/_checks.ts";
import { MoonbaseError } from "../errors.ts";
import { KdfGate } from "./kdf_gate.ts";

/** A task that runs until `release()` is called. */
function held() {
  let release!: () => void;
  const done = new Promise<void>((r) => release = r);
  return { release, task: () => done };
}

Deno.test("kdf gate: at most `limit` at once, the rest in arrival order", async () => {
  const gate = new KdfGate(2, 10);
  const started: number[] = [];
  const tasks = [0, 1, 2, 3, 4].map(() => held());
  const runs = tasks.map((t, i) =>
    gate.run(() => {
      started.push(i);
      return t.task();
    })
  );
  await Promise.resolve();
  assertEquals(started, [0, 1]);
  assertEquals([gate.running, gate.waiting], [2, 3]);
  tasks[1].release();
  await runs[1];
  await new Promise((r) => setTimeout(r, 0));
  assertEquals(started, [0, 1, 2], "the first waiter takes the freed slot");
  tasks[0].release();
  tasks[2].release();
  await Promise.all([runs[0], runs[2]]);
  await new Promise((r) => setTimeout(r, 0));
  assertEquals(started, [0, 1, 2, 3, 4]);
  tasks[3].release();
  tasks[4].release();
  await Promise.all(runs);
  assertEquals([gate.running, gate.waiting], [0, 0]);
});

Deno.test("kdf gate: a full queue refuses with a 503 at once", async () => {
  const gate = new KdfGate(1, 1);
  const a = held(), b = held();
  const first = gate.run(a.task);
  const second = gate.run(b.task);
  const err = await rejection(gate.run(() => Promise.resolve(1)));
  assert(err instanceof MoonbaseError, String(err));
  assertEquals(err.code, "unavailable");
  assertEquals(err.headers["Retry-After"], "1");
  a.release();
  b.release();
  await Promise.all([first, second]);
  assertEquals(await gate.run(() => Promise.resolve(7)), 7, "open again");
});

Deno.test("kdf gate: a failing task frees its slot", async () => {
  const gate = new KdfGate(1, 5);
  const failed = rejection(gate.run(() => Promise.reject(new Error("boom"))));
  const next = gate.run(() => Promise.resolve("ran"));
  assertEquals(String(await failed), "Error: boom");
  assertEquals(await next, "ran");
  assertEquals([gate.running, gate.waiting], [0, 0]);
});

Deno.test("kdf gate: logins go ahead of new passwords, which leave a slot free", async () => {
  const gate = new KdfGate(2, 10, 10);
  const started: string[] = [];
  const tasks = new Map<string, ReturnType<typeof held>>();
  const run = (name: string, priority: "high" | "low") => {
    const t = held();
    tasks.set(name, t);
    return gate.run(() => {
      started.push(name);
      return t.task();
    }, priority);
  };
  const runs = [run("s1", "low"), run("s2", "low"), run("s3", "low")];
  await Promise.resolve();
  assertEquals(started, ["s1"], "sign-ups hold one slot of two");
  runs.push(run("login1", "high"));
  await Promise.resolve();
  assertEquals(started, ["s1", "login1"], "a login starts at once");
  runs.push(run("login2", "high"));
  tasks.get("s1")!.release();
  await runs[0];
  await new Promise((r) => setTimeout(r, 0));
  assertEquals(started, ["s1", "login1", "login2"], "the waiting login first");
  tasks.get("login1")!.release();
  tasks.get("login2")!.release();
  await Promise.all([runs[3], runs[4]]);
  await new Promise((r) => setTimeout(r, 0));
  assertEquals(started.slice(3), ["s2"], "then sign-ups, one at a time");
  tasks.get("s2")!.release();
  await runs[1];
  await new Promise((r) => setTimeout(r, 0));
  tasks.get("s3")!.release();
  await Promise.all(runs);
  assertEquals([gate.running, gate.waiting], [0, 0]);
});

Deno.test("kdf gate: a full sign-up queue does not refuse logins", async () => {
  const gate = new KdfGate(1, 4, 1);
  const a = held(), b = held();
  const first = gate.run(a.task, "low");
  const second = gate.run(b.task, "low");
  const err = await rejection(gate.run(() => Promise.resolve(1), "low"));
  assert(err instanceof MoonbaseError, String(err));
  assertEquals(err.code, "unavailable");
  const login = gate.run(() => Promise.resolve("login"), "high");
  a.release();
  assertEquals(await login, "login");
  b.release();
  await Promise.all([first, second]);
});
