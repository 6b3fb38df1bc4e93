// The receipt verifier as one portable module set: this entry and what it imports (receipt.ts, saved-response.ts,
// canonical-json.ts, sha256.ts, signature.ts, provider-id.ts, …) run unchanged in node and in browsers, on
// @noble/curves and @noble/hashes, with no node: module and no Buffer. `svc-agent verify`, the package entry
// (index.js), the gateway's own receipt check and the page /verify all use it; test/unit/src/receipt/receipt.test.ts bundles it
// for a browser to hold it to that.
export { RECEIPT_VERSION, RECEIPT_VERSION_TOOLS, receiptStatus, verifyReceipt } from "./receipt.ts";
export { checkSavedResponse, readSavedResponse, verifySavedResponse } from "./saved-response.ts";
export { decodeSavedBytes } from "./saved-text.ts";
export type { Receipt, ReceiptCheck, ReceiptExpectations, ReceiptStatus, ReceiptVerdict, SavedKind, SavedResponse } from "./types.ts";
