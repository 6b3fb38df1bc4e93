// Sign-in through any OpenID Connect issuer with `openid-client`: authorization code flow with PKCE (S256),
// `state` and `nonce` checked on the way back. Discovery is retried on demand, so an identity provider that
// is down at start-up delays sign-in, not the gateway.
import * as client from "openid-client";
import type { Logger } from "pino";
import { ApiError } from "../../src/errors.ts";
import type { UserClaims } from "../keys/key-store.ts";
import type { LoginTransaction } from "./session.ts";

export const CALLBACK_PATH = "/auth/callback";
const SCOPE = "openid email profile";

export interface OidcSettings {
  issuer: URL;
  clientId: string;
  /** Absent for a public client, which then relies on PKCE alone. */
  clientSecret?: string;
  /** The address browsers reach this gateway at; the callback is `{publicUrl}/auth/callback`. */
  publicUrl: URL;
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Flags as given → settings, or an error a person can act on. */
export function oidcSettings(flags: { issuer: string; clientId?: string; clientSecret?: string; publicUrl?: string }): OidcSettings {
  const url = (value: string, flag: string): URL => {
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      throw new Error(`${flag} ${value} is not a URL`);
    }
    if (parsed.protocol !== "https:" && !(parsed.protocol === "http:" && LOOPBACK.has(parsed.hostname))) {
      throw new Error(`${flag} must be https (plain http is allowed only on loopback, for tests): ${value}`);
    }
    return parsed;
  };
  if (flags.clientId === undefined || flags.clientId === "") throw new Error("--oidc-issuer needs --oidc-client-id");
  if (flags.publicUrl === undefined) {
    throw new Error("--oidc-issuer needs --public-url: the address browsers use to reach this gateway (the callback is {public-url}/auth/callback)");
  }
  return {
    issuer: url(flags.issuer, "--oidc-issuer"),
    clientId: flags.clientId,
    ...(flags.clientSecret ? { clientSecret: flags.clientSecret } : {}),
    publicUrl: url(flags.publicUrl.replace(/\/+$/, ""), "--public-url"),
  };
}

export class OidcClient {
  private config?: Promise<client.Configuration>;
  readonly redirectUri: string;

  constructor(
    readonly settings: OidcSettings,
    private readonly logger: Logger,
  ) {
    this.redirectUri = `${settings.publicUrl.href.replace(/\/+$/, "")}${CALLBACK_PATH}`;
  }

  /** The issuer's address to send the browser to, and what the callback must match. */
  async begin(): Promise<{ url: URL; transaction: LoginTransaction }> {
    const config = await this.configuration();
    const transaction = { state: client.randomState(), nonce: client.randomNonce(), verifier: client.randomPKCECodeVerifier() };
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUri,
      scope: SCOPE,
      state: transaction.state,
      nonce: transaction.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(transaction.verifier),
      code_challenge_method: "S256",
    });
    return { url, transaction };
  }

  /** Redeems the callback's code; checks state, nonce, PKCE and the ID token. Returns who signed in. */
  async finish(search: string, transaction: LoginTransaction): Promise<UserClaims> {
    const config = await this.configuration();
    try {
      const tokens = await client.authorizationCodeGrant(config, new URL(`${this.redirectUri}${search}`), {
        pkceCodeVerifier: transaction.verifier,
        expectedState: transaction.state,
        expectedNonce: transaction.nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims()!; // idTokenExpected: the grant fails without a valid ID token
      let profile: Record<string, unknown> = claims;
      // many issuers keep email and name out of the ID token and hand them out at the userinfo endpoint
      if (claims.email === undefined && claims.name === undefined) {
        profile = { ...(await client.fetchUserInfo(config, tokens.access_token, claims.sub)), ...claims };
      }
      const text = (value: unknown) => (typeof value === "string" && value !== "" ? value : null);
      // an address the issuer itself calls unverified could name anyone, and the admin list matches addresses
      const email = profile.email_verified === false ? null : text(profile.email);
      return { issuer: claims.iss, subject: claims.sub, email, name: text(profile.name) };
    } catch (err) {
      throw new ApiError("sign_in_failed", `Sign-in failed: ${reason(err)}. Start again from the settings page.`);
    }
  }

  private configuration(): Promise<client.Configuration> {
    if (this.config === undefined) {
      const { issuer, clientId, clientSecret } = this.settings;
      const auth = clientSecret === undefined ? client.None() : client.ClientSecretBasic(clientSecret);
      const insecure = issuer.protocol === "http:" ? { execute: [client.allowInsecureRequests] } : {};
      this.config = client.discovery(issuer, clientId, clientSecret, auth, insecure);
      this.config.catch((err: unknown) => {
        this.logger.warn({ issuer: issuer.href, err: String(err) }, "OIDC discovery failed; sign-in will retry it");
        this.config = undefined;
      });
    }
    return this.config.catch(() => {
      throw new ApiError("sign_in_unavailable", `The identity provider at ${this.settings.issuer.href} cannot be reached; try again shortly.`);
    });
  }

  /** Fetches the issuer's metadata now, so a misconfiguration shows in the log at start-up. */
  warmUp(): void {
    this.configuration().catch(() => undefined);
  }
}

/**
 * What went wrong, in the words that help: the identity provider's own error (`access_denied: …`) when it
 * sent one, else the precise check that failed, which openid-client wraps as the cause of a generic error.
 */
function reason(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const { error, error_description: description } = err as { error?: unknown; error_description?: unknown };
  if (typeof error === "string") return `the identity provider said ${error}${typeof description === "string" ? `: ${description}` : ""}`;
  return err.cause instanceof Error ? `${err.message} (${err.cause.message})` : err.message;
}
