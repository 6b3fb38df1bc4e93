// The hardware rung's evidence (DESIGN §4): an X.509 chain that leads to a trusted attestation root and whose
// leaf binds the agent's two public keys and names the device serial, as Apple's Managed Device Attestation
// issues it. In tests the root is a throwaway CA. No node: module: @peculiar/x509 finds the platform's WebCrypto
// (node's global `crypto`, or a browser's), so the same check runs wherever svc's evidence is checked.
import "reflect-metadata"; // @peculiar/x509's dependency injection needs the polyfill loaded first
import * as x509 from "@peculiar/x509";
import * as asn1js from "asn1js";
import { bytesToHex, concatBytes, hexToBytes } from "@noble/hashes/utils.js";
import { sha256Hex } from "../receipt/sha256.ts";

/** Apple's freshness-code extension: here SHA-256 of the agent's raw signing key then sealing key. */
export const FRESHNESS_OID = "1.2.840.113635.100.8.11.1";
/** Apple's device serial number extension. */
export const SERIAL_OID = "1.2.840.113635.100.8.9.1";
export const MAX_CHAIN_CERTS = 5;

/** What the leaf must bind: SHA-256 over the raw Ed25519 then raw X25519 public keys, lowercase hex. */
export function keysDigest(signingKey: string, sealingKey: string): string {
  return sha256Hex(concatBytes(hexToBytes(signingKey), hexToBytes(sealingKey)));
}

/** One PEM certificate, parsed (throws on one that does not parse). */
export const parseCertificate = (pem: string): x509.X509Certificate => new x509.X509Certificate(pem);

export function splitPem(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

export type ChainVerdict = { ok: true; serial: string } | { ok: false; reason: string };

/** Checks a leaf-first PEM chain: each link's signature, dates and CA flag, the root, the key binding, the serial. */
export async function verifyChain(
  pems: readonly string[],
  roots: readonly x509.X509Certificate[],
  expectedDigest: string,
  now: Date = new Date(),
): Promise<ChainVerdict> {
  let chain: x509.X509Certificate[];
  try {
    chain = pems.map((pem) => new x509.X509Certificate(pem));
  } catch {
    return { ok: false, reason: "the attestation chain does not parse as X.509 certificates" };
  }
  const leaf = chain[0];
  if (!leaf || chain.length > MAX_CHAIN_CERTS) return { ok: false, reason: `the attestation chain must hold 1 to ${MAX_CHAIN_CERTS} certificates` };
  for (const [index, cert] of chain.entries()) {
    if (now < cert.notBefore || now > cert.notAfter) {
      return { ok: false, reason: `certificate ${cert.subject} is not valid now (valid ${cert.notBefore.toISOString()} to ${cert.notAfter.toISOString()})` };
    }
    const issuer = chain[index + 1];
    if (!issuer) continue;
    if (!isCa(issuer)) return { ok: false, reason: `certificate ${issuer.subject} signs another but is not a CA` };
    if (cert.issuer !== issuer.subject || !(await cert.verify({ publicKey: issuer, signatureOnly: true }))) {
      return { ok: false, reason: `certificate ${cert.subject} is not signed by ${issuer.subject}` };
    }
  }
  const top = chain[chain.length - 1]!;
  if (!(await leadsToRoot(top, roots, now))) return { ok: false, reason: `the attestation chain does not lead to a trusted root (top issuer ${top.issuer})` };
  const bound = extensionBytes(leaf, FRESHNESS_OID);
  if (!bound || bytesToHex(bound) !== expectedDigest) {
    return { ok: false, reason: "the leaf certificate does not bind this agent's keys (freshness extension mismatch)" };
  }
  const serial = extensionText(leaf, SERIAL_OID);
  if (!serial) return { ok: false, reason: "the leaf certificate carries no device serial" };
  return { ok: true, serial };
}

async function leadsToRoot(top: x509.X509Certificate, roots: readonly x509.X509Certificate[], now: Date): Promise<boolean> {
  for (const root of roots) {
    if (now < root.notBefore || now > root.notAfter) continue;
    if (sameBytes(top.rawData, root.rawData)) return true;
    if (top.issuer === root.subject && (await top.verify({ publicKey: root, signatureOnly: true }))) return true;
  }
  return false;
}

function sameBytes(a: ArrayBuffer, b: ArrayBuffer): boolean {
  const [x, y] = [new Uint8Array(a), new Uint8Array(b)];
  return x.length === y.length && x.every((byte, i) => byte === y[i]);
}

function isCa(cert: x509.X509Certificate): boolean {
  return cert.getExtension(x509.BasicConstraintsExtension)?.ca === true;
}

/** The extension's value unwrapped from its DER OCTET STRING (or raw, when it is not one). */
function extensionBytes(cert: x509.X509Certificate, oid: string): Uint8Array | undefined {
  const ext = cert.getExtension(oid);
  if (!ext) return undefined;
  const parsed = asn1js.fromBER(ext.value);
  if (parsed.offset !== -1 && parsed.result instanceof asn1js.OctetString) return parsed.result.valueBlock.valueHexView;
  return new Uint8Array(ext.value);
}

function extensionText(cert: x509.X509Certificate, oid: string): string | undefined {
  const ext = cert.getExtension(oid);
  if (!ext) return undefined;
  const parsed = asn1js.fromBER(ext.value);
  const value = parsed.result;
  if (parsed.offset !== -1 && (value instanceof asn1js.Utf8String || value instanceof asn1js.PrintableString)) return value.valueBlock.value;
  if (parsed.offset !== -1 && value instanceof asn1js.OctetString) return new TextDecoder().decode(value.valueBlock.valueHexView);
  return undefined;
}
