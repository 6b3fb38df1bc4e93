// SPEC §2.1's sampling controls end to end, black-box against real `svc-gateway serve` and `svc-agent start`
// processes on the tiny model: parsed by the gateway, sealed to the provider, applied by its engine, and
// covered by the receipt (request_sha256 over the sealed bytes, response_sha256 over what was returned).
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/receipt/canonical-json.ts";
import { nodeSha256Hex } from "../../src/crypto/sha256-node.ts";
import type { Receipt } from "../../src/receipt/receipt.ts";
import { verifySavedResponse } from "../../src/receipt/saved-response.ts";
import { post, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";

const MESSAGES = [{ role: "user", content: "Say something." }];
// cache_prompt false: the sealed request then holds no caller cache scope (an HMAC under the gateway's secret)
const ask = (extra: Record<string, unknown> = {}) => ({ model: "qwen3-4b", messages: MESSAGES, max_tokens: 40, cache_prompt: false, ...extra });

let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw.stop());

async function complete(body: Record<string, unknown>) {
  const res = await post(gw, "/v1/chat/completions", body);
  expect(res.status).toBe(200);
  const json = (await res.json()) as { choices: { message: { content: string }; finish_reason: string }[]; svc_receipt: Receipt };
  return { content: json.choices[0]!.message.content, finish: json.choices[0]!.finish_reason, receipt: json.svc_receipt };
}

/** What the gateway sealed, rebuilt from the request and the receipt's nonces: its hash must be request_sha256. */
function sealedHash(receipt: Receipt, fields: Record<string, unknown>): string {
  return nodeSha256Hex(canonicalJson({ model: "qwen3-4b", messages: MESSAGES, max_tokens: 40, ...fields, cache_prompt: false, nonce: receipt.gateway_nonce, client_nonce: null }));
}

describe("§2.1 stop in a stream (SPEC §3)", () => {
  it("ends before the stop with no byte of it in any delta, finish_reason stop on the stop chunk, and a receipt over the cut content", async () => {
    const reference = await complete(ask({ temperature: 0 }));
    const stop = reference.content.slice(12, 15);
    const before = reference.content.slice(0, reference.content.indexOf(stop));

    const res = await post(gw, "/v1/chat/completions", ask({ temperature: 0, stop, stream: true }));
    expect(res.status).toBe(200);
    const transcript = await res.text();
    const events: EventSourceMessage[] = [];
    createParser({ onEvent: (e) => events.push(e) }).feed(transcript);
    expect(events.at(-1)?.data).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data) as Record<string, any>); // eslint-disable-line @typescript-eslint/no-explicit-any -- chunk fields are checked one by one
    const final = chunks.pop()!;
    const deltas = chunks.slice(1).map((c) => c.choices[0].delta.content as string);
    // every delta is a piece of the text before the stop, in order: nothing of the stop or after it
    expect(deltas.join("")).toBe(before);
    expect(final.choices).toEqual([{ index: 0, delta: {}, finish_reason: "stop" }]);
    expect(final.usage.completion_tokens).toBe(before.length + stop.length);

    const receipt = final.svc_receipt as Receipt;
    expect(receipt.finish_reason).toBe("stop");
    expect(receipt.response_sha256).toBe(nodeSha256Hex(before));
    // the stop travelled in the sealed request, normalised to a list
    expect(receipt.request_sha256).toBe(sealedHash(receipt, { temperature: 0, stop: [stop] }));
    // and a saved transcript re-verifies offline
    const verdict = verifySavedResponse(transcript, { providerId: gw.providerId });
    expect(verdict.problems).toEqual([]);
  });
});

describe("§2.1 seed through the gateway", () => {
  it("the same seed gives the same answer at temperature 0.8; another seed another", async () => {
    const a = await complete(ask({ temperature: 0.8, seed: 1234 }));
    const b = await complete(ask({ temperature: 0.8, seed: 1234 }));
    const c = await complete(ask({ temperature: 0.8, seed: 1235 }));
    expect(a.content).toHaveLength(40);
    expect(b.content).toBe(a.content);
    expect(c.content).not.toBe(a.content);
    expect(a.receipt.request_sha256).toBe(sealedHash(a.receipt, { temperature: 0.8, seed: 1234 }));
  });

  it("a request that sets no sampling control seals exactly the fields it always did", async () => {
    const { receipt } = await complete(ask({ temperature: 0.5 }));
    expect(receipt.request_sha256).toBe(sealedHash(receipt, { temperature: 0.5 }));
  });
});

describe("§2.1 refusals", () => {
  it("a logit_bias token the model does not have is 400 invalid_value from the provider, naming the key", async () => {
    const res = await post(gw, "/v1/chat/completions", ask({ logit_bias: { "999999": 5 } }));
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { code: string; param: string } };
    expect([error.code, error.param]).toEqual(["invalid_value", "logit_bias.999999"]);
  });

  it("n > 1 is 400 unsupported_parameter naming n, before any provider is used", async () => {
    const res = await post(gw, "/v1/chat/completions", ask({ n: 2 }));
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { code: string; param: string; svc_action: string } };
    expect([error.code, error.param, error.svc_action]).toEqual(["unsupported_parameter", "n", "fix_request"]);
  });
});
