// Which Node lines svc runs on: the ones its tests run on (README "Requirements"), one table that package.json's
// `engines`, the bins' start-up check and `svc-agent doctor` all read. Imports nothing, so an old Node reaches it.

/** Each supported major line from its first supported minor; the patch release CI tests sits beside it. */
export const SUPPORTED_NODE = [
  { major: 20, minor: 19, tested: "20.20.2" },
  // node:sqlite needs no flag from 22.13 on
  { major: 22, minor: 13, tested: "22.23.3" },
  { major: 24, minor: 0, tested: "24.21.0" },
  { major: 26, minor: 0, tested: "26.10.0" },
] as const;

/** package.json's `engines.node`, written from the table (a test holds the two equal). */
export const ENGINES_NODE = SUPPORTED_NODE.map((line) => `^${line.major}.${line.minor}.0`).join(" || ");

/** For people: "20.19+, 22.13+, 24 or 26". */
export const SUPPORTED_NODE_TEXT = SUPPORTED_NODE.map((line) => (line.minor === 0 ? `${line.major}` : `${line.major}.${line.minor}+`))
  .join(", ")
  .replace(/, ([^,]+)$/, " or $1");

export function nodeSupported(version: string = process.versions.node): boolean {
  const [major, minor] = version.replace(/^v/, "").split(".").map(Number);
  return SUPPORTED_NODE.some((line) => line.major === major && (minor ?? 0) >= line.minor);
}

/** The one line an unsupported Node gets, before anything that could crash on it loads. */
export function unsupportedNodeLine(program: string, version: string = process.versions.node): string {
  return `${program}: Node ${version} is not supported; svc runs on Node ${SUPPORTED_NODE_TEXT} (see the README's Requirements)`;
}

/** Exits 1 with that line on an unsupported Node. */
export function requireSupportedNode(program: string): void {
  if (nodeSupported()) return;
  process.stderr.write(`${unsupportedNodeLine(program)}\n`);
  process.exit(1);
}
