// Sign-in state in cookies: the session cookie (a signed JWT naming a server-side session row, with expiry),
// the short-lived sign-in transaction cookie (encrypted: it carries the PKCE verifier), and CSRF tokens
// bound to the session. All keys derive from one secret kept under --data-dir, so restarts keep sessions.
import { parseCookie, stringifySetCookie } from "cookie";
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { EncryptJWT, jwtDecrypt, jwtVerify, SignJWT } from "jose";
import { z } from "zod";
import type { KeyStore, User } from "../keys/key-store.ts";

const SESSION_COOKIE = "svc_session";
const LOGIN_COOKIE = "svc_login";
const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
const LOGIN_TTL_S = 10 * 60;
const SECRET_FILE = "session-secret";
const AUDIENCE = "svc-settings";

/** What the sign-in redirect must come back with (OIDC `state`, `nonce` and the PKCE verifier). */
const LoginTransaction = z.object({ state: z.string(), nonce: z.string(), verifier: z.string() });
export type LoginTransaction = z.infer<typeof LoginTransaction>;

export interface SignedIn {
  sessionId: string;
  user: User;
}

/** The gateway's cookie secret: read from the data dir, or made there (0600) on first start. */
export function loadCookieSecret(dataDir: string): Buffer {
  const path = join(dataDir, SECRET_FILE);
  if (!existsSync(path)) writeFileSync(path, randomBytes(32), { mode: 0o600, flag: "wx" });
  const secret = readFileSync(path);
  if (secret.length < 32) throw new Error(`${path} is shorter than 32 bytes; delete it to make a new one (this signs everyone out)`);
  return secret;
}

const derive = (secret: Buffer, purpose: string) => new Uint8Array(hkdfSync("sha256", secret, "", `svc ${purpose}`, 32));

export class Sessions {
  private readonly signKey: Uint8Array;
  private readonly loginKey: Uint8Array;
  private readonly csrfKey: Uint8Array;

  constructor(
    secret: Buffer,
    private readonly store: KeyStore,
    /** Secure cookies when the public URL is https. */
    private readonly secure: boolean,
  ) {
    this.signKey = derive(secret, "session cookie");
    this.loginKey = derive(secret, "sign-in transaction");
    this.csrfKey = derive(secret, "csrf");
  }

  /** Starts a session for a user who just signed in; returns its Set-Cookie header. */
  async start(userId: number): Promise<string> {
    const sessionId = randomBytes(16).toString("base64url");
    const expiresAt = Date.now() + SESSION_TTL_MS;
    await this.store.createSession(sessionId, userId, expiresAt);
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: "HS256" })
      .setJti(sessionId)
      .setSubject(String(userId))
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(Math.floor(expiresAt / 1000))
      .sign(this.signKey);
    return this.cookie(SESSION_COOKIE, token, "/", SESSION_TTL_MS / 1000);
  }

  /** The signed-in user, or undefined for a missing, forged, expired or signed-out session cookie. */
  async read(cookieHeader: string | undefined): Promise<SignedIn | undefined> {
    const token = parseCookie(cookieHeader ?? "")[SESSION_COOKIE];
    if (token === undefined) return undefined;
    let payload;
    try {
      payload = (await jwtVerify(token, this.signKey, { algorithms: ["HS256"], audience: AUDIENCE })).payload;
    } catch {
      return undefined;
    }
    // a store that cannot be reached is its own answer (503), not a signed-out browser
    const user = payload.jti === undefined ? undefined : await this.store.sessionUser(payload.jti);
    if (user === undefined || String(user.id) !== payload.sub) return undefined;
    return { sessionId: payload.jti!, user };
  }

  /** Ends the session server-side, so a copy of the cookie is worthless too; returns the clearing header. */
  async end(sessionId: string): Promise<string> {
    await this.store.deleteSession(sessionId);
    return this.cookie(SESSION_COOKIE, "", "/", 0);
  }

  csrfToken(sessionId: string): string {
    return createHmac("sha256", this.csrfKey).update(sessionId).digest("base64url");
  }

  checkCsrf(sessionId: string, token: string | undefined): boolean {
    const expected = Buffer.from(this.csrfToken(sessionId));
    const given = Buffer.from(token ?? "");
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  async saveLogin(transaction: LoginTransaction): Promise<string> {
    const token = await new EncryptJWT({ ...transaction })
      .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
      .setAudience(AUDIENCE)
      .setExpirationTime(`${LOGIN_TTL_S}s`)
      .encrypt(this.loginKey);
    return this.cookie(LOGIN_COOKIE, token, "/auth/", LOGIN_TTL_S);
  }

  async readLogin(cookieHeader: string | undefined): Promise<LoginTransaction | undefined> {
    const token = parseCookie(cookieHeader ?? "")[LOGIN_COOKIE];
    if (token === undefined) return undefined;
    try {
      const { payload } = await jwtDecrypt(token, this.loginKey, { audience: AUDIENCE });
      const parsed = LoginTransaction.safeParse(payload);
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  clearLogin(): string {
    return this.cookie(LOGIN_COOKIE, "", "/auth/", 0);
  }

  private cookie(name: string, value: string, path: string, maxAgeS: number): string {
    return stringifySetCookie({ name, value, path, maxAge: maxAgeS, httpOnly: true, sameSite: "lax", secure: this.secure });
  }
}
