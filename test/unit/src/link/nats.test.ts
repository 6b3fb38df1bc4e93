// docs/operator-guide.md "Running more than one gateway", securing NATS: what `--nats` and the access flags accept
// before any connection is tried, and that a URL's credentials are never shown.
import { describe, expect, it } from "vitest";
import { connectNats, redactNats } from "../../../../src/link/nats.ts";

const refusal = (urls: string, access = {}) =>
  connectNats(urls, "test", access).then(
    () => undefined,
    (err: Error & { exitCode?: number }) => [err.exitCode, err.message],
  );

describe("Running more than one gateway: the --nats URLs and access flags", () => {
  it("shows the servers without a user, password or token", () => {
    expect(redactNats("nats://u:p%40ss@a:4222, nats://tok@b:4222,tls://c:4222")).toBe("nats://a:4222,nats://b:4222,tls://c:4222");
  });

  it("refuses what is not a nats:// or tls:// host:port URL, showing it without its secret", async () => {
    expect(await refusal("http://h:4222")).toEqual([2, "--nats: http://h:4222 is not a nats://host:port URL"]);
    expect(await refusal("nats://u:secret@h:4222/path")).toEqual([2, "--nats: nats://h:4222/path is not a nats://host:port URL"]);
    expect(await refusal(" , ")).toEqual([2, "--nats: no server URL given"]);
  });

  it("credentials are the same on every URL, and come from the URLs or a creds file, not both", async () => {
    expect(await refusal("nats://a:1@h1:4222,nats://h2:4222")).toEqual([2, "--nats: give every server the same credentials (or none, with --nats-creds)"]);
    expect(await refusal("nats://a:1@h1:4222,nats://a:2@h2:4222")).toEqual([2, "--nats: give every server the same credentials (or none, with --nats-creds)"]);
    expect(await refusal("nats://tok@h:4222", { creds: "/x.creds" })).toEqual([2, "--nats-creds: give credentials in the --nats URLs or a creds file, not both"]);
  });

  it("a client certificate needs its key, and a file that cannot be read is named with its flag", async () => {
    expect(await refusal("tls://h:4222", { tlsCert: "/c.pem" })).toEqual([2, "--nats-tls-cert: a client certificate needs its key, --nats-tls-key FILE (and the other way round)"]);
    expect(await refusal("nats://h:4222", { creds: "/no/such.creds" })).toEqual([2, "--nats-creds /no/such.creds: cannot read it (ENOENT)"]);
  });
});
