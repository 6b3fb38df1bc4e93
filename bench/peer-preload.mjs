// Preloaded (`node --import`) into the Portkey peer, a server we run but do not change: binds it to 127.0.0.1
// and prints its port, and works around its known stream failure on Node (below).
import net from "node:net";

// Its CLI takes `--port=N` but listens on every interface (@hono/node-server's listen(port, undefined, cb)).
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (port, host, ...rest) {
  if (typeof port === "number" && (host === undefined || typeof host === "function" || host === "0.0.0.0" || host === "::")) {
    if (typeof host === "function") rest.unshift(host);
    this.once("listening", () => console.log(`peer-preload: listening on 127.0.0.1:${this.address().port}`));
    return listen.call(this, port, "127.0.0.1", ...rest);
  }
  return listen.call(this, port, host, ...rest);
};

// Portkey 1.15.2 wraps an upstream SSE answer as `new Response(stream, upstreamResponse)` and then appends its
// x-portkey-* headers; under @hono/node-server's Response that keeps fetch's immutable Headers, so every stream
// fails with "TypeError: immutable" (Portkey-AI/gateway#1389, #1550; #1551 clones the response the same way).
// Only event streams are re-wrapped, with the real Response captured before hono replaces the global one.
const NativeResponse = globalThis.Response;
const nativeFetch = globalThis.fetch;
globalThis.fetch = async (...args) => {
  const res = await nativeFetch(...args);
  if (!res.headers.get("content-type")?.startsWith("text/event-stream")) return res;
  return new NativeResponse(res.body, { status: res.status, statusText: res.statusText, headers: new Headers(res.headers) });
};

// Its server has no SIGTERM handler, and a process killed by the signal never writes its `--cpu-prof` profile.
process.once("SIGTERM", () => process.exit(0));
