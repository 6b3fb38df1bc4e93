// The HPKE primitives of src/crypto/native-hpke.ts bound to this process's node:crypto, for the agent and the gateway.
import * as nodeCrypto from "node:crypto";
import { nativeHpke } from "./native-hpke.ts";

const native = nativeHpke(nodeCrypto, Buffer);

/** DHKEM(X25519, HKDF-SHA256) on node:crypto, for @hpke/core's CipherSuite. */
export const nodeDhkemX25519 = native.kem;
/** HKDF-SHA256 (RFC 5869) on node:crypto's HMAC, in place of WebCrypto's asynchronous one. */
export const NodeHkdfSha256 = native.Hkdf;
