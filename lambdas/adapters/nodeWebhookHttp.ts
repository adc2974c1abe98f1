/**
 * One webhook attempt over node:http(s): a POST with the signed headers, answered — status, headers
 * and the whole body — within the timeout or not at all; past it the socket is destroyed. Redirects are never followed (a 3xx is an answer that is not 2xx, so the
 * attempt fails and the delivery retries): a redirect cannot lead a delivery somewhere the policy
 * refuses. Under `public-https` the addresses are checked where they are used: the connection's own
 * DNS lookup is replaced by one that refuses a private answer (so no second resolution can differ,
 * no DNS rebinding), a literal address is checked before connecting, and the socket's remote address
 * once more when it connects.
 */
import type { LookupAddress } from 'node:dns';
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import type { AttemptResult } from '../core/webhooks.js';
import type { WebhookHttp } from '../ports/Webhooks.js';
import {
  checkWebhookUrl,
  type ResolveHost,
  refusedAddress,
  refusedAmong,
  systemResolve,
  type WebhookUrlPolicy,
} from './webhookAddressPolicy.js';

class RefusedAddressError extends Error {
  override readonly name = 'RefusedAddressError';
}

export function createNodeWebhookHttp(options: {
  readonly policy: WebhookUrlPolicy;
  /** @default the system resolver (`dns.lookup`, all addresses) */
  readonly resolve?: ResolveHost;
}): WebhookHttp {
  const resolve = options.resolve ?? systemResolve;
  const guarded = options.policy === 'public-https';

  const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
    resolve(hostname).then(
      (addresses) => {
        const wanted = addresses.filter(
          (entry) => !lookupOptions.family || lookupOptions.family === entry.family,
        );
        const refused = guarded ? refusedAmong(wanted) : null;
        if (refused) return callback(new RefusedAddressError(`${hostname}: ${refused}`), '', 0);
        const first = wanted[0];
        if (!first)
          return callback(Object.assign(new Error(`${hostname}: no address`), { code: 'ENOTFOUND' }), '', 0);
        if (lookupOptions.all)
          return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, wanted);
        return callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };

  return {
    post(request) {
      const checked = checkWebhookUrl(request.url, options.policy);
      if (!checked.ok) return Promise.resolve({ kind: 'refused', reason: checked.reason });
      const { url } = checked;
      const host = url.hostname.replace(/^\[|\]$/g, '');
      if (guarded && isIP(host) !== 0) {
        const refused = refusedAddress(host);
        if (refused) return Promise.resolve({ kind: 'refused', reason: refused });
      }
      return new Promise<AttemptResult>((settle) => {
        let done = false;
        const finish = (result: AttemptResult): void => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          settle(result);
        };
        const requestOptions: RequestOptions = {
          method: 'POST',
          headers: {
            ...request.headers,
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(request.body)),
            'user-agent': 'Postdate-Webhooks/1',
          },
          // A fresh connection per attempt: a pooled socket would skip the lookup (and its check).
          agent: false,
          lookup,
        };
        const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
        const req = send(url, requestOptions, (response) => {
          // The timeout covers the whole exchange (DESIGN §11): the answer counts once its body has
          // ended, so a receiver that sends headers and never ends holds nothing past the timeout.
          // The body is the receiver's; nothing of it is kept.
          const statusCode = response.statusCode ?? 0;
          const retryAfter = response.headers['retry-after'];
          response.on('end', () =>
            finish({ kind: 'response', statusCode, ...(retryAfter === undefined ? {} : { retryAfter }) }),
          );
          response.on('close', () => {
            if (!response.complete) finish({ kind: 'network', reason: 'ECONNRESET' });
          });
          response.on('error', () => {});
          response.resume();
        });
        const timer = setTimeout(() => {
          finish({ kind: 'timeout' });
          req.destroy();
        }, request.timeoutMs);
        req.on('socket', (socket: Socket) => {
          if (!guarded) return;
          socket.once('connect', () => {
            const refused = socket.remoteAddress ? refusedAddress(socket.remoteAddress) : 'no remote address';
            if (refused) req.destroy(new RefusedAddressError(refused));
          });
        });
        req.on('error', (error) => {
          if (error instanceof RefusedAddressError) finish({ kind: 'refused', reason: error.message });
          else finish({ kind: 'network', reason: networkReason(error) });
        });
        req.end(request.body);
      });
    },
  };
}

/** A short, safe reason: the error's code (ECONNREFUSED, ENOTFOUND, …), never a stack. */
function networkReason(error: Error): string {
  const code = (error as NodeJS.ErrnoException).code;
  return typeof code === 'string' ? code : error.name;
}
