/**
 * The tenant's suppression list (DESIGN §3, §12):
 * - GET /v1/suppressions?limit=&cursor= — a page in address order, `{items, next_cursor}`;
 * - PUT /v1/suppressions/{address} `{reason?}` — adds the address (normalised), 200 with the entry;
 * - DELETE /v1/suppressions/{address} — removes it, 200 with the entry removed, 404 when absent.
 * The tenant always comes from the authorizer: another tenant's entries are never seen nor touched.
 */

import type { SuppressionRouteName } from '../../core/apiRoutes.js';
import { problem, validationProblem } from '../../core/problem.js';
import { SUPPRESSION_LIST_LIMIT } from '../../core/requestLimits.js';
import { validateSuppressionRequest } from '../../core/requestSchemas.js';
import {
  formerQuotedKey,
  formerSuppressionKey,
  validateSuppressionAddress,
} from '../../core/suppressions.js';
import {
  jsonResult,
  problemResult,
  type RouteDependencies,
  type RouteHandler,
  readJsonBody,
} from '../route.js';

export function suppressionRoutes(
  deps: Pick<RouteDependencies, 'store' | 'now'>,
): Readonly<Record<SuppressionRouteName, RouteHandler>> {
  const list = deps.store.suppressions;
  return {
    async listSuppressions({ tenant, event }) {
      const query: Readonly<Record<string, string | undefined>> = event.queryStringParameters ?? {};
      const errors: { field: string; message: string }[] = [];
      let limit: number = SUPPRESSION_LIST_LIMIT.default;
      if (query.limit !== undefined) {
        const value = /^\d{1,4}$/.test(query.limit) ? Number(query.limit) : Number.NaN;
        if (value >= SUPPRESSION_LIST_LIMIT.min && value <= SUPPRESSION_LIST_LIMIT.max) limit = value;
        else {
          errors.push({
            field: 'limit',
            message: `must be a whole number from ${SUPPRESSION_LIST_LIMIT.min} to ${SUPPRESSION_LIST_LIMIT.max}`,
          });
        }
      }
      let after: string | null = null;
      if (query.cursor !== undefined && query.cursor !== '') {
        after = decodeSuppressionCursor(query.cursor);
        if (after === null) errors.push({ field: 'cursor', message: 'is not a cursor from this listing' });
      }
      if (errors.length > 0) return problemResult(validationProblem(errors));
      const page = await list.list(tenant, { limit, after });
      return jsonResult(
        200,
        { items: page.items, next_cursor: page.next === null ? null : encodeSuppressionCursor(page.next) },
        {},
        { count: page.items.length },
      );
    },

    async putSuppression({ tenant, params, event }) {
      const address = validateSuppressionAddress(params.address ?? '');
      // The body is optional: none means `{}`; one that is there must be a valid JSON object.
      let body: unknown;
      if (event.body !== undefined && event.body !== '') {
        const read = readJsonBody(event);
        if (!read.ok) return problemResult(read.problem);
        body = read.value;
      }
      const request = validateSuppressionRequest(body);
      const errors = [...(address.ok ? [] : address.errors), ...(request.ok ? [] : request.errors)];
      if (!address.ok || !request.ok) return problemResult(validationProblem(errors));
      const entry = await list.put({
        tenant,
        address: address.value,
        reason: request.value.reason,
        now: deps.now(),
      });
      return jsonResult(200, entry, {}, { reason: entry.reason });
    },

    async deleteSuppression({ tenant, params }) {
      const address = validateSuppressionAddress(params.address ?? '');
      if (!address.ok) return problemResult(validationProblem(address.errors));
      // And the entry a quoted local part had before decision 0184, if it was stored so.
      const entry = await list.remove(tenant, address.value, formerQuotedKey(params.address ?? ''));
      if (entry === null) {
        return problemResult(
          problem('notFound', 'This address is not on the suppression list.', {
            errors: [{ field: 'address', message: 'is not on the suppression list' }],
          }),
        );
      }
      return jsonResult(200, entry, {}, { reason: entry.reason });
    },
  };
}

/**
 * The opaque `cursor` of GET /v1/suppressions: base64url of `{"v":1,"a":address}`, the last address
 * of the previous page (the listing is in address order). It carries no tenant: the tenant always
 * comes from the authorizer, so a cursor from another tenant's listing only says where to start.
 */
export function encodeSuppressionCursor(lastAddress: string): string {
  return Buffer.from(JSON.stringify({ v: 1, a: lastAddress }), 'utf8').toString('base64url');
}

/** The address to continue after; null when the cursor is not one we issued. */
export function decodeSuppressionCursor(cursor: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,1024}$/.test(cursor)) return null;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { v, a } = value as Record<string, unknown>;
  if (v !== 1 || typeof a !== 'string') return null;
  const address = validateSuppressionAddress(a);
  // An entry stored before decision 0153 is listed, and so may end a page, in its Unicode form; one
  // stored before 0184, with its local part quoted.
  const stored = [address.ok ? address.value : undefined, formerQuotedKey(a)];
  return address.ok &&
    stored.some((key) => key === a || (key !== undefined && formerSuppressionKey(key) === a))
    ? a
    : null;
}
