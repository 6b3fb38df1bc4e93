// A chat request's parse off the gateway's event loop (gateway/openai/chat-parser.ts): each message is a parsed
// JSON body and its nonces, each answer the request as parseChatRequest built it, or the ApiError it threw.
import { parentPort, workerData } from "node:worker_threads";
import type { Catalog } from "../../src/catalog.ts";
import { ApiError } from "../../src/errors.ts";
import { parseChatRequest } from "./chat-request.ts";
import type { ParseJob, ParseAnswer } from "./chat-parser.ts";
import type { ReasoningFormat } from "./tools-request.ts";

const { catalog, reasoningFormat } = workerData as { catalog: Catalog; reasoningFormat: ReasoningFormat };

parentPort!.on("message", ({ id, body, ...inputs }: ParseJob) => {
  let answer: ParseAnswer;
  try {
    const { entry, ...request } = parseChatRequest(body, { catalog, reasoningFormat, ...inputs });
    answer = { id, request: { ...request, alias: entry.alias } };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    answer = { id, error: { code: err.code, message: err.message, param: err.param } };
  }
  parentPort!.postMessage(answer);
});
