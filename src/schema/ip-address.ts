// The `ipv4` and `ipv6` formats of a JSON Schema, without node:net so that a caller's client (browsers included) checks
// them as the gateway does. isIPv6 accepts what node:net's isIPv6 accepts (held to it by a unit test): eight groups of
// one to four hex digits, or fewer around one "::" standing for at least one, the last two optionally a dotted IPv4,
// and an optional zone ("%eth0").

const IPV4 = /^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
const GROUP = /^[0-9a-f]{1,4}$/i;
const ZONE = /^[0-9a-z.:-]+$/i;

export const isIPv4 = (s: string): boolean => IPV4.test(s);

export function isIPv6(s: string): boolean {
  const percent = s.indexOf("%");
  if (percent !== -1 && !ZONE.test(s.slice(percent + 1))) return false;
  const address = percent === -1 ? s : s.slice(0, percent);
  const halves = address.split("::");
  if (halves.length > 2) return false;
  const [head, tail] = halves.map((half) => (half === "" ? [] : half.split(":")));
  const groups = [...head!, ...(tail ?? [])];
  // only the address's last piece may be a dotted IPv4, worth two groups
  const last = groups.at(-1);
  const dotted = last !== undefined && last.includes(".") && (tail === undefined || tail.length > 0);
  if (dotted && !isIPv4(last)) return false;
  const hex = dotted ? groups.slice(0, -1) : groups;
  if (!hex.every((g) => GROUP.test(g))) return false;
  const count = hex.length + (dotted ? 2 : 0);
  return tail === undefined ? count === 8 : count <= 7;
}
