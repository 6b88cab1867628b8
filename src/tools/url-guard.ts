/**
 * The URL guard of `web_scrape`: a URL that a model (or a page it read, or a prompt injection) hands the tool
 * is refused before any request unless it is a public http(s) address. An agent must not be steered into
 * probing its owner's network through its arguments.
 *
 * Refused: other schemes; credentials in the URL; `localhost`, `*.localhost`, `*.local`, `*.internal`,
 * `*.home.arpa`, `*.lan`, single-label names, and wildcard-DNS names that echo an IP (`127.0.0.1.nip.io`);
 * IPv4 loopback, private (RFC 1918), link-local, CGNAT, "this network", benchmarking, documentation, multicast
 * and reserved ranges, in every spelling the WHATWG URL parser accepts (decimal `2130706433`, hex `0x7f.1`,
 * octal `0177.0.0.1`, short `127.1`: it normalizes them, and the check reads the normalized address); IPv6
 * loopback, unspecified, unique-local (fc00::/7), link-local, site-local, multicast, and IPv4 carried inside IPv6
 * (IPv4-mapped `::ffff:`, IPv4-translated `::ffff:0:`, IPv4-compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`),
 * checked as the IPv4 inside; local-use NAT64 `64:ff9b:1::/48` and Teredo `2001::/32` outright. Any number of
 * trailing dots is stripped before the checks, and a name with an empty label is refused.
 *
 * Written by hand: the checks are a few ranges over the parser's normalized host, and no kept dependency has them.
 * (A public name may still resolve to a private address; the service, not this process, fetches the page.)
 */
import { ValidationError } from "../http/errors.js";

export class UnsafeUrlError extends ValidationError {
  override name = "UnsafeUrlError";
}

const BLOCKED_SUFFIXES = [".localhost", ".local", ".internal", ".home.arpa", ".lan", ".intranet", ".corp", ".localdomain"];
/** wildcard DNS services whose names resolve to the IP they spell */
const ECHO_DNS = /(^|\.)(nip\.io|sslip\.io|xip\.io|localtest\.me|lvh\.me|vcap\.me|lacolhost\.com)$/i;

/** [first, last] of blocked IPv4 ranges, as 32-bit numbers */
const V4_BLOCKED: [string, number][] = [
  ["0.0.0.0", 8], // this network
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // CGNAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local (cloud metadata lives here)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
];

function v4ToNumber(ip: string): number | undefined {
  const parts = ip.split(".");
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return undefined;
    n = n * 256 + Number(p);
  }
  return n;
}

const RANGES = V4_BLOCKED.map(([base, bits]) => {
  const start = v4ToNumber(base)!;
  return { start, end: start + 2 ** (32 - bits) - 1, label: `${base}/${bits}` };
});

/** Why an IPv4 address (dotted, normalized) is not public, or undefined. */
export function blockedIPv4(ip: string): string | undefined {
  const n = v4ToNumber(ip);
  if (n === undefined) return "not a valid IPv4 address";
  const range = RANGES.find((r) => n >= r.start && n <= r.end);
  return range ? `${ip} is in the non-public range ${range.label}` : undefined;
}

/** The 8 groups of an IPv6 address (as the URL parser prints it, without brackets), or undefined. */
function v6Groups(ip: string): number[] | undefined {
  let text = ip.toLowerCase();
  // a trailing dotted IPv4 (the parser prints hex, but be liberal)
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = v4ToNumber(dotted[1]!);
    if (n === undefined) return undefined;
    text = `${text.slice(0, dotted.index)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  const all = [...head, ...Array<string>(Math.max(0, fill)).fill("0"), ...tail];
  if (all.length !== 8 || all.some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return undefined;
  return all.map((g) => parseInt(g, 16));
}

function v4From(hi: number, lo: number): string {
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
}

/** Why an IPv6 address is not public, or undefined. */
export function blockedIPv6(ip: string): string | undefined {
  const g = v6Groups(ip);
  if (!g) return "not a valid IPv6 address";
  const zeroPrefix = (k: number) => g.slice(0, k).every((x) => x === 0);
  if (zeroPrefix(8)) return "the unspecified address ::";
  if (zeroPrefix(7) && g[7] === 1) return "the IPv6 loopback ::1";
  const embedded = (v4: string, how: string) => {
    const why = blockedIPv4(v4);
    return why ? `${how} ${why}` : undefined;
  };
  if (zeroPrefix(5) && g[5] === 0xffff) return embedded(v4From(g[6]!, g[7]!), "IPv4-mapped") ?? undefined;
  // IPv4-translated (RFC 2765, ::ffff:0:0/96)
  if (zeroPrefix(4) && g[4] === 0xffff && g[5] === 0) return embedded(v4From(g[6]!, g[7]!), "IPv4-translated");
  if (zeroPrefix(6)) return embedded(v4From(g[6]!, g[7]!), "IPv4-compatible") ?? "a deprecated IPv4-compatible address";
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return embedded(v4From(g[6]!, g[7]!), "NAT64");
  // local-use NAT64 (RFC 8215): where the IPv4 sits depends on the operator's prefix length, so none is public
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return `${ip} is a local-use NAT64 address (64:ff9b:1::/48)`;
  if (g[0] === 0x2002) return embedded(v4From(g[1]!, g[2]!), "6to4");
  // Teredo (2001::/32) carries the client's IPv4 (inverted) in its last 32 bits: a tunnel, never a web server
  if (g[0] === 0x2001 && g[1] === 0) return `${ip} is a Teredo tunnel address (2001::/32)`;
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return `${ip} is a unique-local address (fc00::/7)`;
  if ((first & 0xffc0) === 0xfe80) return `${ip} is a link-local address (fe80::/10)`;
  if ((first & 0xffc0) === 0xfec0) return `${ip} is a site-local address (fec0::/10)`;
  if ((first & 0xff00) === 0xff00) return `${ip} is a multicast address (ff00::/8)`;
  if (first === 0x2001 && g[1] === 0x0db8) return `${ip} is a documentation address (2001:db8::/32)`;
  return undefined;
}

/**
 * The URL as the parser normalized it, if it is a public http(s) address; else an `UnsafeUrlError` (a
 * `ValidationError`) saying why, thrown before anything is sent.
 */
export function assertPublicHttpUrl(raw: unknown): URL {
  if (typeof raw !== "string" || raw.trim() === "") throw new UnsafeUrlError("url must be a non-empty string");
  if (raw.length > 2048) throw new UnsafeUrlError("url is longer than 2048 characters");
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new UnsafeUrlError(`not a valid absolute URL: ${JSON.stringify(raw.slice(0, 200))} (give a full http:// or https:// address)`);
  }
  const refuse = (why: string): never => {
    throw new UnsafeUrlError(`refused to fetch ${url.protocol}//${url.host}: ${why}; only public http(s) web pages can be read`);
  };
  if (url.protocol !== "http:" && url.protocol !== "https:") refuse(`the scheme ${url.protocol.replace(/:$/, "")} is not http or https`);
  if (url.username || url.password) refuse("URLs with credentials are not fetched");
  if (url.port && !["80", "443", "8080", "8443"].includes(url.port)) refuse(`port ${url.port} is not a web port (80, 443, 8080, 8443)`);
  // every trailing dot goes (`localhost..` is still localhost to a lenient resolver); an empty label is no name
  const host = url.hostname.toLowerCase().replace(/\.+$/, "");
  if (host.startsWith("[")) {
    const why = blockedIPv6(host.slice(1, -1));
    if (why) refuse(why);
    return url;
  }
  if (/^\d+\.\d+\.\d+\.\d+$/.test(host)) {
    const why = blockedIPv4(host);
    if (why) refuse(why);
    return url;
  }
  if (host.split(".").includes("") && host !== "") refuse(`${host} has an empty label`);
  if (host === "" || host === "localhost" || BLOCKED_SUFFIXES.some((s) => host.endsWith(s)))
    refuse(`${host || "an empty host"} is a local name`);
  if (!host.includes(".")) refuse(`${host} is a single-label (intranet) name`);
  if (ECHO_DNS.test(host)) refuse(`${host} is a wildcard-DNS name that resolves to the address it spells`);
  // a name whose last label is all digits is not a domain (the parser would have read it as IPv4 if it were one)
  if (/^\d+$/.test(host.split(".").at(-1)!)) refuse(`${host} is not a domain name`);
  return url;
}
