// The client package's hand-written types (client/public-types.d.ts, shipped as its dist/index.d.ts and re-exported by
// the main package's index.d.ts) against the implementation: tsc checks each assignment below, both ways, so a
// declaration that drifts from the code fails `tsc --noEmit`; the test body only shows the values are the ones named.
import { describe, expect, it } from "vitest";
import type * as Declared from "../../../client/public-types.js";
import type * as PackageEntry from "../../../index.js";
import * as Client from "../../../client/index.ts";
import type { SealedFetchOptions } from "../../../client/sealed-fetch.ts";

describe("svc-agent-client's public types", () => {
  it("declare what client/index.ts implements (createSealedFetch, its options and the receipt verifier), checked by tsc in both directions", () => {
    const declared: [typeof Declared.createSealedFetch, typeof Declared.verifyReceipt, typeof Declared.readSavedResponse, typeof Declared.verifySavedResponse, typeof Declared.decodeSavedBytes] =
      [Client.createSealedFetch, Client.verifyReceipt, Client.readSavedResponse, Client.verifySavedResponse, Client.decodeSavedBytes];
    const implemented: [typeof Client.createSealedFetch, typeof Client.verifyReceipt, typeof Client.readSavedResponse, typeof Client.verifySavedResponse, typeof Client.decodeSavedBytes] = declared;
    const options = (o: SealedFetchOptions): Declared.SealedFetchOptions => o;
    const back = (o: Declared.SealedFetchOptions): SealedFetchOptions => o;
    const versions: [typeof Declared.RECEIPT_VERSION, typeof Declared.RECEIPT_VERSION_TOOLS] = [Client.RECEIPT_VERSION, Client.RECEIPT_VERSION_TOOLS];
    expect(implemented).toEqual([Client.createSealedFetch, Client.verifyReceipt, Client.readSavedResponse, Client.verifySavedResponse, Client.decodeSavedBytes]);
    expect([options, back].map((f) => f({ baseURL: "http://gw/v1" }))).toEqual([{ baseURL: "http://gw/v1" }, { baseURL: "http://gw/v1" }]);
    expect(versions).toEqual([1, 2]);
  });

  it("are the main package's too: svc-agent's index.d.ts re-exports them, createSealedFetch included", () => {
    const entry: typeof PackageEntry.createSealedFetch = Client.createSealedFetch;
    const declared: typeof Declared.createSealedFetch = entry;
    expect(declared).toBe(Client.createSealedFetch);
  });
});
