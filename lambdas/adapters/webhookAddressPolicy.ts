/**
 * Where a webhook may go (DESIGN §11). In AWS (`public-https`) the URL must be `https`, and the
 * address connected to must not be loopback, private, link-local (the instance metadata service at
 * 169.254.169.254 and fd00:ec2::254 included), shared, multicast or reserved. Locally (`local`, the
 * local stack's setting) plain `http` and any address are allowed, so a receiver on 127.0.0.1 works.
 * The rule is checked twice by design: when an endpoint is created, on the addresses its name has
 * then (checkNewWebhookUrl), and at each delivery's connection (nodeWebhookHttp.ts), as DNS changes.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';

export type WebhookUrlPolicy = 'public-https' | 'local';

const BLOCKED = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  // NAT64 would reach the IPv4 ranges above by another name. (IPv4-mapped ::ffff:a.b.c.d needs no
  // row: BlockList checks it against the IPv4 rules, and a ::ffff:0:0/96 row would match every IPv4.)
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv6');
}

/** Why an address may not be connected to under `public-https`, or null when it may. */
export function refusedAddress(address: string): string | null {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 0) return `${bare} is not an IP address`;
  return BLOCKED.check(bare, family === 4 ? 'ipv4' : 'ipv6')
    ? `address ${bare} is loopback, private, link-local or reserved`
    : null;
}

/** The first refusal among a name's addresses, or null when every one may be connected to. */
export function refusedAmong(addresses: readonly LookupAddress[]): string | null {
  for (const entry of addresses) {
    const refused = refusedAddress(entry.address);
    if (refused !== null) return refused;
  }
  return null;
}

/** Resolves a host name to all its addresses (tests give names their own answers). */
export type ResolveHost = (hostname: string) => Promise<readonly LookupAddress[]>;

/** The system resolver (`dns.lookup`, every address): the one a delivery's connection uses. */
export const systemResolve: ResolveHost = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
      if (error) reject(error);
      else resolve(addresses);
    });
  });

/** How long creating an endpoint waits for its name's addresses before it takes the URL unchecked. */
const NEW_URL_RESOLVE_TIMEOUT_MS = 2000;

export type UrlCheck =
  | { readonly ok: true; readonly url: URL }
  | { readonly ok: false; readonly reason: string };

/**
 * The checks that need no DNS: a URL, `http(s)` (`https` only under `public-https`), no credentials
 * in it, and under `public-https` no literal address or `localhost` name that the policy refuses.
 * A name is resolved, and its addresses checked, when a delivery connects (nodeWebhookHttp.ts).
 */
export function checkWebhookUrl(text: string, policy: WebhookUrlPolicy): UrlCheck {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: 'must be an absolute URL' };
  }
  const schemes = policy === 'local' ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) {
    return { ok: false, reason: policy === 'local' ? 'must be http or https' : 'must be https' };
  }
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'must not carry credentials' };
  if (url.hostname === '') return { ok: false, reason: 'must name a host' };
  if (policy === 'public-https') {
    // Brackets off, and trailing dots: `localhost.` is `localhost` (the dot only makes it absolute).
    const host = url.hostname.replace(/^\[|\]$|\.+$/g, '').toLowerCase();
    if (host === 'localhost' || host.endsWith('.localhost'))
      return { ok: false, reason: 'must not be localhost' };
    if (isIP(host) !== 0) {
      const refused = refusedAddress(host);
      if (refused !== null) return { ok: false, reason: `must not point at a private address (${refused})` };
    }
  }
  return { ok: true, url };
}

/**
 * checkWebhookUrl, then, under `public-https`, the addresses the URL's host name resolves to now: when
 * any is one the policy refuses, so is the URL — an endpoint no delivery could reach is a 400 when it
 * is created, not a day of refused attempts (decision 0217). A name that does not resolve (no such
 * name, no answer within `timeoutMs`) is taken as before: its endpoint may not be live yet, and each
 * delivery still checks the address it connects to.
 */
export async function checkNewWebhookUrl(
  text: string,
  policy: WebhookUrlPolicy,
  resolve: ResolveHost = systemResolve,
  timeoutMs: number = NEW_URL_RESOLVE_TIMEOUT_MS,
): Promise<UrlCheck> {
  const checked = checkWebhookUrl(text, policy);
  if (!checked.ok || policy === 'local') return checked;
  const host = checked.url.hostname;
  // A literal address was checked above; only a name has addresses to look up.
  if (isIP(host.replace(/^\[|\]$/g, '')) !== 0) return checked;
  const addresses = await resolvedWithin(resolve, host, timeoutMs);
  const refused = refusedAmong(addresses);
  return refused === null
    ? checked
    : { ok: false, reason: `must not resolve to a private address (${host}: ${refused})` };
}

/**
 * The host's addresses, or none when it does not resolve within `timeoutMs`. Why it did not is not
 * kept: no such name, a failing resolver and a slow one all leave the URL taken.
 */
async function resolvedWithin(
  resolve: ResolveHost,
  host: string,
  timeoutMs: number,
): Promise<readonly LookupAddress[]> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<readonly LookupAddress[]>((settle) => {
    timer = setTimeout(() => settle([]), timeoutMs);
  });
  try {
    return await Promise.race([resolve(host).catch((): readonly LookupAddress[] => []), late]);
  } finally {
    clearTimeout(timer);
  }
}
