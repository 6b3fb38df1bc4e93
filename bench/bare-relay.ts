// The floor beside the blind bench (bench/blind.ts): the least a gateway-blind relay written in Node does for one
// request, on the same coordinator link, coordinator and agent as svc's gateway. node:http in, the caller's envelope
// placed as it came, the frames relayed as lines, the receipt's signature checked (billing rests on it), one log
// line. No API keys, limits, queues' admission, routing policy, deadlines, usage store or metrics: svc's gateway's
// CPU per blind request less this one's is what those cost. GETs (the client's listing and evidence) go to the real
// gateway. Usage: node --import tsx bench/bare-relay.ts COORDINATOR_URL SECRET_FILE GATEWAY_URL CATALOG_FILE
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { SEALED_FRAMES_TYPE, type SealedEnvelope } from "../src/blind/format.ts";
import { lineText } from "../src/blind/lines.ts";
import { findAlias, parseCatalog } from "../src/catalog.ts";
import { verifySignatureNative } from "../src/crypto/signing.ts";
import { Link } from "../src/link/link.ts";
import { checkReceipt } from "../src/session/answer-reader.ts";
import { GATEWAY_MAX_FRAME_BYTES, GATEWAY_PATH, type DirectoryEntry, type FromGateway, type ToGateway } from "../src/wire/gateway.ts";

const [coordinatorUrl, secretFile, gatewayUrl, catalogFile] = process.argv.slice(2) as [string, string, string, string];
const catalog = parseCatalog(JSON.parse(readFileSync(catalogFile, "utf8")));
const providers = new Map<string, DirectoryEntry>();
const open = new Map<string, { res: ServerResponse; envelope: SealedEnvelope; provider: DirectoryEntry }>();

const link = new Link<ToGateway, FromGateway>(
  { url: coordinatorUrl, path: GATEWAY_PATH, read: (data) => JSON.parse(String(data)) as ToGateway, maxPayload: GATEWAY_MAX_FRAME_BYTES, heartbeatMs: 1_000, bearer: readFileSync(secretFile, "utf8").trim() },
  { message: (message) => message && receive(message) },
);
link.start();

function receive(message: ToGateway): void {
  if (message.t === "directory") {
    for (const entry of message.put) providers.set(entry.id, entry);
    for (const id of message.gone) providers.delete(id);
    return;
  }
  if (message.t !== "frame" && message.t !== "end" && message.t !== "rejected" && message.t !== "stale" && message.t !== "gone") return;
  const session = open.get(message.id);
  if (!session) return;
  const { res, envelope, provider } = session;
  if (message.t !== "frame") {
    open.delete(message.id);
    if (!res.headersSent) res.writeHead(502).end();
    return;
  }
  if (!res.headersSent) res.writeHead(200, { "content-type": SEALED_FRAMES_TYPE }).write(lineText({ type: "provider", provider: provider.id }));
  if (message.final !== true) return void res.write(lineText({ type: "frame", data: message.data, final: false }));
  open.delete(message.id);
  const entry = findAlias(catalog, envelope.alias)!;
  const verdict = checkReceipt(message.receipt, { provider, entry, requestSha256: envelope.request_sha256 }, undefined, { signature: verifySignatureNative });
  if (!verdict.valid) throw new Error(`bare relay: a receipt did not verify: ${verdict.problems.join("; ")}`);
  res.end(lineText({ type: "frame", data: message.data, final: true }));
  process.stdout.write(`${JSON.stringify({ level: 30, time: Date.now(), msg: "request", provider: provider.id, usage: verdict.receipt?.usage })}\n`);
}

const server = createServer((req, res) => {
  if (req.method === "GET") {
    void fetch(new URL(req.url!, gatewayUrl), { headers: { authorization: req.headers.authorization ?? "" } }).then(async (answer) => {
      res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" }).end(Buffer.from(await answer.arrayBuffer()));
    });
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const envelope = JSON.parse(Buffer.concat(chunks).toString()) as SealedEnvelope;
    const candidates = envelope.candidates.map((c) => c.provider);
    const provider = providers.get(candidates.find((id) => providers.has(id)) ?? "");
    if (!provider) return void res.writeHead(503).end();
    const id = `s_${randomBytes(12).toString("base64url")}`;
    open.set(id, { res, envelope, provider });
    link.send({ t: "place", id, provider: provider.id, alias: envelope.alias, floor: "process", exclude: [], candidates, blind: envelope, max_bytes: 64 * 1024 * 1024 });
  });
});
server.listen(0, "127.0.0.1", () => console.log(`bare relay at http://127.0.0.1:${(server.address() as AddressInfo).port}`));
