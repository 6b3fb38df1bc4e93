// The WebSocket address of a coordinator path, from the coordinator's http(s) URL.

export function wsUrl(httpUrl: string, path: string): string {
  return httpUrl.replace(/^http/, "ws").replace(/\/+$/, "") + path;
}

/** A `--coordinator` value must be an http(s) origin; says so plainly instead of failing inside ws. */
export function checkCoordinatorUrl(url: string): string {
  if (!/^https?:\/\/[^/]/.test(url)) throw new Error(`--coordinator ${url}: expected an http:// or https:// URL`);
  return url;
}
