// Writing the settings pages: HTML with headers that keep them out of caches and frames and forbid inline
// code, redirects after form posts, and reading a small urlencoded form body.
import type { IncomingMessage, ServerResponse } from "node:http";
import { ApiError } from "../../src/errors.ts";
import { collectBody } from "../http/body.ts";
import { dropUnreadBody, errorHeaders, sendBody } from "../http/respond.ts";
import { errorPage } from "./pages.ts";

const FORM_LIMIT_BYTES = 16 * 1024;

const PAGE_HEADERS = {
  // a page may hold a secret that is shown once: no cache may keep it
  "cache-control": "no-store",
  "content-security-policy":
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  // same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on our own form posts
  "referrer-policy": "same-origin",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
};

export function sendHtml(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  sendBody(res, status, "text/html; charset=utf-8", body, { ...PAGE_HEADERS, ...headers });
}

/** A page's script or stylesheet: rebuilt when the gateway restarts (perhaps upgraded), so revalidated rather than kept. */
export function sendPageAsset(res: ServerResponse, type: string, body: string): void {
  sendBody(res, 200, type, body, { "cache-control": "no-cache", "x-content-type-options": "nosniff" });
}

export function sendErrorPage(req: IncomingMessage, res: ServerResponse, error: ApiError, headers: Record<string, string> = {}): void {
  dropUnreadBody(req, res);
  sendHtml(res, error.status, errorPage(error.message), { ...errorHeaders(error), ...headers });
}

/** 303 See Other: after a form post the browser GETs the next page, so a reload never posts twice. */
export function redirect(res: ServerResponse, location: string, cookies: string[] = []): void {
  res.writeHead(303, { location, "cache-control": "no-store", "content-length": 0, ...(cookies.length ? { "set-cookie": cookies } : {}) });
  res.end();
}

export async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const type = req.headers["content-type"]?.split(";")[0]?.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") {
    throw new ApiError("invalid_form", "Send this form from the settings page (application/x-www-form-urlencoded).");
  }
  const body = await collectBody(req, FORM_LIMIT_BYTES);
  if (body === undefined) throw new ApiError("invalid_form", "The form is too large.");
  return new URLSearchParams(body.toString("utf8"));
}
