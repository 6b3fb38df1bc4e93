// Package entry for SDK users: the offline receipt verifier (RECEIPTS.md), src/verifier.ts, the same portable
// module the CLI, the gateway and the page /verify run. The sources are TypeScript run through tsx, as the bins
// are, so this loads them without a build step; index.d.ts gives their types.
import { tsImport } from "tsx/esm/api";

const verifier = await tsImport("./src/verifier.ts", import.meta.url);

export const { RECEIPT_VERSION, RECEIPT_VERSION_TOOLS, verifyReceipt, readSavedResponse, verifySavedResponse } = verifier;
