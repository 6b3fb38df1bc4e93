// Who may see every user's usage: a request with an operator key, or a signed-in user whose email is on the
// operator's admin list (`serve --admin-emails`, SVC_ADMIN_EMAILS). The list is parsed here, at the boundary.
import type { IncomingMessage } from "node:http";
import { z } from "zod";
import type { User } from "../keys/key-store.ts";

const Email = z.string().trim().toLowerCase().pipe(z.email());

/** `a@x.org, B@y.org` → lower-cased addresses; throws naming the first entry that is not an email address. */
export function parseAdminEmails(list: string | undefined): string[] {
  const entries = (list ?? "").split(",").filter((entry) => entry.trim() !== "");
  return entries.map((entry) => {
    const parsed = Email.safeParse(entry);
    if (!parsed.success) throw new Error(`${JSON.stringify(entry.trim())} is not an email address`);
    return parsed.data;
  });
}

export class Admins {
  private readonly emails: ReadonlySet<string>;

  constructor(
    emails: readonly string[],
    /**
     * Whether the request's bearer key is an operator key. It goes through the API's own check (and its count
     * of failures per address), so this page is no easier a place to guess keys than the API; it throws the
     * API's 401 (or 429) for a bad key.
     */
    readonly isOperatorRequest: (req: IncomingMessage) => Promise<boolean>,
  ) {
    this.emails = new Set(emails);
  }

  /** Email addresses compare case-insensitively: identity providers differ in how they spell them. */
  isAdmin(user: User): boolean {
    return user.email !== null && this.emails.has(user.email.toLowerCase());
  }
}
