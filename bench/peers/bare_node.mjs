/**
 * The peers' baseline: a bare Node `http` server answering the same small
 * JSON envelope as bench/baseline.ts. Usage: `node bare_node.mjs <port>`.
 *
 * @module
 */

import http from "node:http";
import process from "node:process";

const body = new TextEncoder().encode(
  JSON.stringify({ status: 200, data: { ok: true }, error: "" }),
);
const server = http.createServer((_req, res) => {
  res.writeHead(200, {
    "content-type": "application/json; charset=utf-8",
    "content-length": body.byteLength,
  });
  res.end(body);
});
server.listen(Number(process.argv[2] ?? 0), "127.0.0.1");
