/**
 * The realtime baseline: a bare `Deno.serve` holding SSE streams the way
 * Moonbase does (one byte-bounded `ReadableStream` per connection, a
 * `ready` event first) and sending each POSTed JSON body, as the record of
 * a `create` event in Moonbase's wire format, to every stream (one frame,
 * encoded once). No database, rules, logs or limits: what Deno itself costs
 * per subscriber and per delivery. Prints `listening <port>` once up.
 *
 * @module
 */

const encoder = new TextEncoder();
const streams = new Set<ReadableStreamDefaultController<Uint8Array>>();
let id = 0;

function subscribe(): Response {
  let c!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({
    start: (ctl) => {
      c = ctl;
    },
    cancel: () => {
      streams.delete(c);
    },
  }, new ByteLengthQueuingStrategy({ highWaterMark: 1024 * 1024 }));
  streams.add(c);
  c.enqueue(encoder.encode("retry: 2000\n\n"));
  c.enqueue(encoder.encode('event: ready\ndata: {"topics":["rt_pings"]}\n\n'));
  return new Response(stream, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
    },
  });
}

async function publish(req: Request): Promise<Response> {
  const record = { id: crypto.randomUUID(), ...await req.json() };
  const json = JSON.stringify({
    action: "create",
    entity: "rt_pings",
    id: record.id,
    record,
    timestamp: new Date().toISOString(),
  });
  const frame = encoder.encode(`id: ${++id}\nevent: create\ndata: ${json}\n\n`);
  for (const c of streams) {
    try {
      c.enqueue(frame);
    } catch {
      streams.delete(c); // the client went away: its stream is closed
    }
  }
  return Response.json({ status: 201, data: record, error: "" }, {
    status: 201,
  });
}

Deno.serve({
  port: 0,
  hostname: "127.0.0.1",
  onListen: ({ port }) => console.log(`listening ${port}`),
}, (req) => req.method === "POST" ? publish(req) : subscribe());
