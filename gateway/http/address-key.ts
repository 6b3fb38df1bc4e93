// One caller's address as the limits count it: the gateway's failed-authentication slowdown and the coordinator's
// cap on pending connections per source address.
import { isIPv6 } from "node:net";

/** IPv4 as it is (also when written IPv4-mapped, `::ffff:a.b.c.d`); IPv6 as its /64 prefix. */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  const bare = address.split("%")[0]!; // a zone id (fe80::1%eth0) names an interface, not a caller
  if (!isIPv6(bare)) return address;
  const groups = (part: string) => (part === "" ? [] : part.split(":").flatMap((g) => (g.includes(".") ? ["0", "0"] : [g])));
  const [head = "", tail] = bare.split("::");
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const full = [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  return `${full.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(":")}::/64`;
}
