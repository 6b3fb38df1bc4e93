// Package entry for SDK users: the offline receipt verifier (RECEIPTS.md). The sources are TypeScript run
// through tsx, as the bins are, so this loads them without a build step; index.d.ts gives their types.
import { tsImport } from "tsx/esm/api";

const receipt = await tsImport("./src/receipt.ts", import.meta.url);
const saved = await tsImport("./src/saved-response.ts", import.meta.url);

export const { RECEIPT_VERSION, RECEIPT_VERSION_TOOLS, verifyReceipt } = receipt;
export const { readSavedResponse, verifySavedResponse } = saved;
