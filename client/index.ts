// svc-client: gateway-blind requests for the OpenAI SDKs (createSealedFetch), and the receipt verifier, so checking a
// saved answer needs neither the gateway nor the agent's install.
export { createSealedFetch, type SealedFetchOptions } from "./sealed-fetch.ts";
export * from "../src/receipt/index.ts";
