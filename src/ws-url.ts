// The WebSocket address of a coordinator path, from the coordinator's http(s) URL.

export function wsUrl(httpUrl: string, path: string): string {
  return httpUrl.replace(/^http/, "ws").replace(/\/+$/, "") + path;
}
