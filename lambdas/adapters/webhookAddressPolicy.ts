/**
 * Where a webhook may go (DESIGN §11). In AWS (`public-https`) the URL must be `https`, and the
 * address connected to must not be loopback, private, link-local (the instance metadata service at
 * 169.254.169.254 and fd00:ec2::254 included), shared, multicast or reserved. Locally (`local`, the
 * local stack's setting) plain `http` and any address are allowed, so a receiver on 127.0.0.1 works.
 */
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
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    if (host === 'localhost' || host.endsWith('.localhost'))
      return { ok: false, reason: 'must not be localhost' };
    if (isIP(host) !== 0) {
      const refused = refusedAddress(host);
      if (refused !== null) return { ok: false, reason: `must not point at a private address (${refused})` };
    }
  }
  return { ok: true, url };
}
