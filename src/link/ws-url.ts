// The WebSocket address of a coordinator path, from the coordinator's http(s) URL.

export function wsUrl(httpUrl: string, path: string): string {
  return httpUrl.replace(/^http/, "ws").replace(/\/+$/, "") + path;
}

/** A `--coordinator` value must be an http(s) origin, or a comma-separated list of them; says so plainly instead of failing inside ws. */
export function checkCoordinatorUrl(url: string): string {
  for (const one of coordinatorUrls(url)) {
    if (!/^https?:\/\/[^/,]/.test(one)) throw new Error(`--coordinator ${one}: expected an http:// or https:// URL`);
  }
  return url;
}

/** The coordinators a `--coordinator URL[,URL...]` names, in the order a link tries them. */
export function coordinatorUrls(list: string): string[] {
  const urls = list.split(",").map((u) => u.trim());
  return urls.length > 1 ? urls.filter((u) => u.length > 0) : urls;
}
