// The pluggable hardware attestor (`--attestor CMD`, DESIGN §4): a program that, given the SHA-256 of the
// agent's two public keys, prints a leaf-first PEM chain whose leaf binds that digest. On a Mac that is the
// device's Managed Device Attestation; in tests, a throwaway CA.
import { spawn } from "node:child_process";
import { splitPem } from "../../src/trust/hardware-chain.ts";

const ATTESTOR_TIMEOUT_MS = 60_000;

export function runAttestor(command: string, digest: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    // the command is the operator's own configuration, run through the shell like a git hook
    const child = spawn(`${command} ${digest}`, { shell: true, stdio: ["ignore", "pipe", "pipe"], timeout: ATTESTOR_TIMEOUT_MS });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const chain = splitPem(out);
      if (code !== 0) reject(new Error(`attestor exited with ${code}: ${err.trim() || "no message"}`));
      else if (chain.length === 0) reject(new Error("attestor printed no PEM certificate"));
      else resolve(chain);
    });
  });
}
