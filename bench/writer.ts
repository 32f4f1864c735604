/**
 * The realtime benchmark's writer: creates in the `rt_pings` entity, each
 * record carrying its sequence number `seq` and `sent`, the time
 * (`performance.timeOrigin + performance.now()`, ms) just before the
 * request; the time its answer was read is kept beside it. Paced (a fixed
 * rate) or as a burst (a few concurrent loops, as fast as they go).
 *
 * @module
 */

import { PINGS } from "./seed.ts";

/** Times of one create, in ms on the shared clock. */
export interface Write {
  /** Just before the request was sent (also in the record). */
  sent: number;
  /** Once the answer was read: the write is committed. */
  ack: number;
  ok: boolean;
}

/** The clock shared by the writer and the subscribers (one host). */
export const now = (): number => performance.timeOrigin + performance.now();

const sleep = (ms: number) =>
  new Promise((r) => setTimeout(r, Math.max(0, ms)));

async function create(base: string, seq: number): Promise<Write> {
  const sent = now();
  try {
    const res = await fetch(`${base}/api/v1/entities/${PINGS}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ seq, sent }),
    });
    await res.arrayBuffer();
    return { sent, ack: now(), ok: res.status === 201 };
  } catch {
    return { sent, ack: now(), ok: false };
  }
}

/** `count` creates at `perSecond`, numbered from `from`. */
export async function paced(
  base: string,
  from: number,
  count: number,
  perSecond: number,
): Promise<Write[]> {
  const t0 = performance.now(), all: Promise<Write>[] = [];
  for (let i = 0; i < count; i++) {
    await sleep(t0 + (i * 1000) / perSecond - performance.now());
    all.push(create(base, from + i));
  }
  return await Promise.all(all);
}

/** `writers` loops of creates for `seconds`, numbered from `from`. */
export async function burst(
  base: string,
  from: number,
  writers: number,
  seconds: number,
): Promise<Write[]> {
  const writes: Write[] = [];
  const end = performance.now() + seconds * 1000;
  let next = 0;
  const loop = async () => {
    while (performance.now() < end) {
      const k = next++;
      writes[k] = await create(base, from + k);
    }
  };
  await Promise.all(Array.from({ length: writers }, loop));
  return writes;
}

/** Writes per second that succeeded. */
export function rate(writes: Write[], seconds: number): number {
  return writes.filter((w) => w.ok).length / seconds;
}
