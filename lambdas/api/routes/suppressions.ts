/**
 * The tenant's suppression list (DESIGN §3, §12):
 * - GET /v1/suppressions?limit=&cursor= — a page in address order, `{items, next_cursor}`;
 * - PUT /v1/suppressions/{address} `{reason?}` — adds the address (normalised), 200 with the entry;
 * - DELETE /v1/suppressions/{address} — removes it, 200 with the entry removed, 404 when absent.
 * The tenant always comes from the authorizer: another tenant's entries are never seen nor touched.
 */

import type { SuppressionRouteName } from '../../core/apiRoutes.js';
import { decodeCursor, encodeCursor, readLimit, unknownParameters } from '../../core/listQuery.js';
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
      const errors = unknownParameters(query, ['limit', 'cursor']);
      const limit = readLimit(query.limit, SUPPRESSION_LIST_LIMIT);
      if (!limit.ok) errors.push(limit.error);
      let after: string | null = null;
      if (query.cursor !== undefined && query.cursor !== '') {
        after = decodeSuppressionCursor(query.cursor, tenant);
        if (after === null)
          errors.push({ field: 'cursor', message: 'is not a next_cursor of this listing (the same key)' });
      }
      if (errors.length > 0) return problemResult(validationProblem(errors));
      const page = await list.list(tenant, {
        limit: limit.ok ? limit.limit : SUPPRESSION_LIST_LIMIT.default,
        after,
      });
      return jsonResult(
        200,
        {
          items: page.items,
          next_cursor: page.next === null ? null : encodeSuppressionCursor(page.next, tenant),
        },
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
 * The opaque `cursor` of GET /v1/suppressions (lambdas/core/listQuery.ts): `{"a":address}`, the
 * last address of the previous page (the listing is in address order), for this tenant only.
 */
export function encodeSuppressionCursor(lastAddress: string, tenant: string): string {
  return encodeCursor(tenant, { a: lastAddress });
}

/** The address to continue after; null when the cursor is not one we issued to this tenant. */
export function decodeSuppressionCursor(cursor: string, tenant: string): string | null {
  const fields = decodeCursor(cursor, tenant);
  if (fields === null) return null;
  const { a } = fields;
  if (typeof a !== 'string') return null;
  const address = validateSuppressionAddress(a);
  // An entry stored before decision 0153 is listed, and so may end a page, in its Unicode form; one
  // stored before 0184, with its local part quoted.
  const stored = [address.ok ? address.value : undefined, formerQuotedKey(a)];
  return address.ok &&
    stored.some((key) => key === a || (key !== undefined && formerSuppressionKey(key) === a))
    ? a
    : null;
}
