/**
 * The baseline: a bare `Deno.serve` answering a small JSON envelope.
 * Prints `listening <port>` once up.
 *
 * @module
 */

const body = JSON.stringify({ status: 200, data: { ok: true }, error: "" });
Deno.serve(
  {
    port: Number(Deno.args[0] ?? 0),
    hostname: "127.0.0.1",
    onListen: ({ port }) => console.log(`listening ${port}`),
  },
  () =>
    new Response(body, {
      headers: { "content-type": "application/json; charset=utf-8" },
    }),
);
