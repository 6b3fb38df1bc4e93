// Types of the package entry (index.js): the client package's (client/public-types.d.ts), since the entry re-exports
// it: createSealedFetch and the receipt verifier, whose data types come from src/receipt/types.ts.
export * from "./client/public-types.js";
