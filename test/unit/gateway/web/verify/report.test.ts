// The page /verify (docs/api.md) reads a file with the same strict reader as `svc-agent verify` (RECEIPTS.md
// "Fields outside the receipt"): what it could not check is a failed "The file" row, never a pass.
import { describe, expect, it } from "vitest";
import { verificationReport } from "../../../../../gateway/web/verify/report.ts";
import { savedAnswer, savedKey, savedResponsesAnswer, transcriptOf } from "../../../../fixtures/saved-answer.ts";

const calls = savedAnswer([
  { type: "tool_call", index: 0, id: "call_a", name: "get_weather" },
  { type: "tool_args", index: 0, text: '{"city":"Paris"}' },
]);
const report = (text: string) => verificationReport({ text, signingKey: savedKey.publicKey }, []);
const fileRows = (text: string) => report(text).rows.filter((r) => r.check === "file");

describe("GET /verify: the file is read as the gateway wrote it", () => {
  it("the gateway's own body and transcript are valid", () => {
    expect(report(JSON.stringify(calls.body)).status).toBe("valid");
    expect(report(transcriptOf(calls.events)).status).toBe("valid");
  });

  it("a call renamed in a delta without an id, a second choice and a body saved with parsed_arguments that disagree are invalid", () => {
    const renamed = transcriptOf(calls.events).replace('{"index":0,"function":{"arguments":', '{"index":0,"function":{"name":"delete_files","arguments":');
    expect(report(renamed).status).toBe("invalid");
    expect(fileRows(renamed).at(-1)).toMatchObject({ result: "fail", words: "event 3: delta.tool_calls: tool call 0 changes its name from get_weather to delete_files" });
    const body = calls.body as { choices: [Record<string, unknown>] };
    const twoChoices = JSON.stringify({ ...body, choices: [body.choices[0], { ...body.choices[0], index: 1 }] });
    expect(report(twoChoices)).toMatchObject({ status: "invalid", headline: "Invalid: one check failed (The file)." });
    const call = (body.choices[0].message as { tool_calls: [{ function: object }] }).tool_calls[0];
    const parsedWrong = JSON.stringify({ ...body, choices: [{ ...body.choices[0], message: { ...(body.choices[0].message as object), tool_calls: [{ ...call, function: { ...call.function, parsed_arguments: { city: "Rome" } } }] } }] });
    expect(fileRows(parsedWrong).at(-1)).toMatchObject({ result: "fail", words: "message.tool_calls[0].function.parsed_arguments is not the JSON value of its arguments" });
  });
});

describe("GET /verify: a saved Responses answer", () => {
  const responses = savedResponsesAnswer([{ type: "delta", text: "Checking." }, { type: "tool_call", index: 0, id: "call_a", name: "get_weather" }, { type: "tool_args", index: 0, text: '{"city":"Paris"}' }]);

  it("the body and the event stream are valid; a delta changed in the stream is invalid", () => {
    expect(report(JSON.stringify(responses.body)).status).toBe("valid");
    expect(report(responses.sse(responses.events)).status).toBe("valid");
    const edited = responses.events.map((e) => (e.type === "response.output_text.delta" ? { ...e, delta: "Changed." } : e));
    expect(fileRows(responses.sse(edited)).at(-1)).toMatchObject({ result: "fail", words: expect.stringContaining("the done text is not the deltas joined") });
  });
});

describe("GET /verify: an answer with logprobs (issue 43)", () => {
  const entry = (id: number, token: string, logprob: number) => ({ id, token, bytes: [...Buffer.from(token)], logprob, top_logprobs: [{ id, token, bytes: [...Buffer.from(token)], logprob }] });
  const answer = savedAnswer([{ type: "logprobs", logprobs: [entry(72, "H", -0.5), entry(105, "i", -0.25)] }, { type: "delta", text: "Hi" }], { version: 4 });

  it("the body and the transcript are valid; a changed logprob is invalid, in plain words", () => {
    expect(report(JSON.stringify(answer.body)).status).toBe("valid");
    expect(report(transcriptOf(answer.events)).status).toBe("valid");
    const edited = transcriptOf(answer.events).replace('"logprob":-0.25}]', '"logprob":-0.125}]');
    expect(edited).not.toBe(transcriptOf(answer.events));
    expect(report(edited).rows.find((r) => r.check === "logprobs_sha256")).toMatchObject({
      label: "Logprobs hash (logprobs_sha256)", result: "fail", words: expect.stringMatching(/^the log probabilities in the file are not the ones the provider signed \(/),
    });
  });
});
