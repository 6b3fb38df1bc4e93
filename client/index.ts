// svc-agent-client: gateway-blind requests for the OpenAI SDKs (createSealedFetch), and the receipt verifier, so
// checking a saved answer needs neither the gateway nor the agent's install. public-types.d.ts declares these for
// callers; the main package's entry re-exports this file.
export { createSealedFetch, type SealedFetchOptions } from "./sealed-fetch.ts";
export { RECEIPT_VERSION, RECEIPT_VERSION_TOOLS, decodeSavedBytes, readSavedResponse, verifyReceipt, verifySavedResponse } from "../src/receipt/index.ts";
