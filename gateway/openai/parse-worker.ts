// A body's parse off the gateway's event loop (gateway/openai/request-parser.ts): its bytes read as JSON within
// the nesting bound, its peek sent back for admission, then the route's parse; each answer the request the route's
// parser built, or the ApiError it threw.
import { parentPort, workerData } from "node:worker_threads";
import type { Catalog } from "../../src/catalog.ts";
import { ApiError } from "../../src/errors.ts";
import { lowerThisThread } from "../../src/process/thread-priority.ts";
import type { CacheInputs } from "../../src/openai/cache-fields.ts";
import { readJsonBody } from "../../src/openai/json-body.ts";
import { parseRoute, peekRoute } from "../../src/openai/route-request.ts";
import { type RouteKind } from "../../src/openai/route-kinds.ts";
import type { ReasoningFormat } from "../../src/openai/tools-request.ts";
import type { FromWorker, ParseInputs, ToWorker } from "./request-parser.ts";

// a body's parse waits for the cores while the event loop every caller shares needs them (bench section 6b)
lowerThisThread();

const { catalog, reasoningFormat } = workerData as { catalog: Catalog; reasoningFormat: ReasoningFormat };
const post = (answer: FromWorker) => parentPort!.postMessage(answer);

/** Bodies read and waiting for admission's verdict. */
const held = new Map<number, { kind: RouteKind; body: unknown; inputs: ParseInputs }>();

/** Runs `work`, answering with its request or its ApiError; any other failure ends the worker (the pool makes another). */
function answer(id: number, work: () => Extract<FromWorker, { type: "request" }>["request"]): void {
  try {
    post({ type: "request", id, request: work() });
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    post({ type: "error", id, error: { code: err.code, message: err.message, param: err.param } });
  }
}

const parse = (kind: RouteKind, body: unknown, inputs: ParseInputs & CacheInputs) =>
  parseRoute(kind, body, { catalog, reasoningFormat, ...inputs });

parentPort!.on("message", (message: ToWorker) => {
  switch (message.type) {
    case "parse":
      return answer(message.id, () => parse(message.kind, message.body, message.inputs));
    case "read": {
      let body: unknown;
      try {
        body = readJsonBody(message.bytes);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        return post({ type: "error", id: message.id, error: { code: err.code, message: err.message, param: err.param } });
      }
      held.set(message.id, { kind: message.kind, body, inputs: message.inputs });
      return post({ type: "peek", id: message.id, peek: peekRoute(body) });
    }
    case "admitted": {
      const read = held.get(message.id);
      held.delete(message.id);
      if (read !== undefined) answer(message.id, () => parse(read.kind, read.body, { ...read.inputs, ...message.cache }));
      return;
    }
    case "refused":
      held.delete(message.id);
      return;
  }
});
