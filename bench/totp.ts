/**
 * Login with a TOTP second factor against a password login alone, on a
 * running benchmark server: a custom load (wrk cannot carry an `mfa_id`
 * from one request to the next). Each login of the TOTP side is two
 * requests — `login` (the password: `401 {mfa_id}`) then `login-totp`
 * (the code) — and a code is accepted once per user and step, so every
 * login uses a user of its own (`USERS`, enrolled first). The baseline
 * logs in users without TOTP. Both sides run `CLIENTS` at once, in
 * alternating rounds; the ratio is logins per second (TOTP ÷ password).
 * Logins are bound by the password hash (scrypt), which both sides pay
 * once per login.
 *
 * @module
 */

import { base32Decode, totpAt } from "../lib/auth/totp.ts";
import type { LoadResult } from "./load.ts";
import { cpuUs, type Proc } from "./procs.ts";

/** The row's name. */
export const TOTP_LOGIN = "login with a TOTP second factor ÷ password login";

/** The auth entity with TOTP on (bench/seed.ts). */
export const MFA_USERS = "mfa_users";
const ENTITY = MFA_USERS;
const PASSWORD = "bench-password-1";
const CLIENTS = 8;
/** Users enrolled: one TOTP login each (a code is accepted once per step). */
const USERS = 160;

let ip = 0;
/** A fresh documentation-range address per login (the rate limit is per IP). */
function nextIp(): string {
  ip++;
  return `198.18.${(ip >> 8) & 255}.${ip & 255}`;
}

async function post(
  url: string,
  path: string,
  body: unknown,
  token?: string,
): Promise<{ status: number; data: Record<string, unknown> }> {
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-forwarded-for": nextIp(),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, data: text ? JSON.parse(text).data : null };
}

/** `USERS` enrolled users (their secrets) and as many plain ones. */
async function setup(
  url: string,
): Promise<
  { enrolled: { email: string; secret: Uint8Array }[]; plain: string[] }
> {
  const enrolled: { email: string; secret: Uint8Array }[] = [];
  const plain: string[] = [];
  const one = async (i: number) => {
    const email = `u${i}@example.com`;
    const c = await post(url, `/api/v1/entities/${ENTITY}`, {
      email,
      password: PASSWORD,
    });
    if (c.status !== 201) throw new Error(`Cannot make a user: ${c.status}`);
    if (i % 2 === 1) return void plain.push(email);
    const login = await post(url, `/api/v1/auth/${ENTITY}/login`, {
      identity: email,
      password: PASSWORD,
    });
    const token = String(login.data.token);
    const s = await post(url, `/api/v1/auth/${ENTITY}/totp/setup`, {}, token);
    const secret = base32Decode(String(s.data.secret))!;
    const ok = await post(url, `/api/v1/auth/${ENTITY}/totp/confirm`, {
      code: totpAt(secret, Date.now()),
    }, token);
    if (ok.status !== 204) throw new Error(`Cannot enrol: ${ok.status}`);
    enrolled.push({ email, secret });
  };
  for (let i = 0; i < USERS * 2; i += CLIENTS) {
    await Promise.all(
      Array.from({ length: CLIENTS }, (_, k) => one(i + k)),
    );
  }
  return { enrolled, plain };
}

/** `CLIENTS` loops of `login` over `jobs` for `seconds`; CPU of `server` too. */
async function run(
  server: Proc,
  seconds: number,
  jobs: (() => Promise<boolean>)[],
): Promise<LoadResult> {
  const lat: number[] = [];
  let errors = 0, next = 0;
  const cpu0 = cpuUs(server.child.pid), t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < end && next < jobs.length) {
        const job = jobs[next++];
        const t = performance.now();
        if (await job()) lat.push(performance.now() - t);
        else errors++;
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = cpuUs(server.child.pid) - cpu0;
  lat.sort((a, b) => a - b);
  const pct = (p: number) =>
    lat[Math.min(lat.length - 1, Math.floor(lat.length * p))] ?? 0;
  return {
    rps: lat.length / elapsed,
    p50: pct(0.5),
    p99: pct(0.99),
    errors,
    non2xx: errors,
    requests: lat.length,
    tool: "deno",
    cpuPerRequest: lat.length ? cpu / lat.length : undefined,
  };
}

/**
 * Measures TOTP logins against password logins on `server` (at `url`),
 * `rounds` alternating rounds of `seconds` each.
 */
export async function benchTotpLogin(
  server: Proc,
  url: string,
  rounds: number,
  seconds: number,
): Promise<{ moonbase: LoadResult; baseline: LoadResult; ratio: number }> {
  const { enrolled, plain } = await setup(url);
  const per = Math.floor(USERS / rounds);
  const login = (email: string) =>
    post(url, `/api/v1/auth/${ENTITY}/login`, {
      identity: email,
      password: PASSWORD,
    });
  const plainJobs = () =>
    plain.slice(0, per).map((email) => async () =>
      (await login(email)).status === 200
    );
  let users = enrolled.slice();
  const totpJobs = () =>
    users.slice(0, per).map(({ email, secret }) => async () => {
      const first = await login(email);
      if (first.status !== 401 || !first.data?.mfa_id) return false;
      // The next step's code: the confirm took this one.
      const second = await post(url, `/api/v1/auth/${ENTITY}/login-totp`, {
        mfa_id: first.data.mfa_id,
        code: totpAt(secret, Date.now() + 30_000),
      });
      return second.status === 200;
    });
  const ts: LoadResult[] = [], ps: LoadResult[] = [];
  for (let i = 0; i < rounds; i++) {
    ps.push(await run(server, seconds, plainJobs()));
    ts.push(await run(server, seconds, totpJobs()));
    // Each user logs in once (a code is accepted once per step).
    users = users.slice(per);
  }
  const sum = (rs: LoadResult[]): LoadResult => {
    const requests = rs.reduce((a, r) => a + r.requests, 0);
    const time = rs.reduce((a, r) => a + (r.rps ? r.requests / r.rps : 0), 0);
    const cpu = rs.reduce((a, r) => a + (r.cpuPerRequest ?? 0) * r.requests, 0);
    return {
      rps: time ? requests / time : 0,
      p50: Math.max(...rs.map((r) => r.p50)),
      p99: Math.max(...rs.map((r) => r.p99)),
      errors: rs.reduce((a, r) => a + r.errors, 0),
      non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
      requests,
      tool: "deno",
      cpuPerRequest: requests ? cpu / requests : undefined,
    };
  };
  const moonbase = sum(ts), baseline = sum(ps);
  return { moonbase, baseline, ratio: moonbase.rps / baseline.rps };
}
