/**
 * The routes of a tenant's suppression list (DESIGN §3, §12), as data: spread into API_ROUTES
 * (apiRoutes.ts). Their handlers are lambdas/api/routes/suppressions.ts, their OpenAPI operations
 * lambdas/api/openapi/suppressionOperations.ts.
 */
import type { ApiRoute } from './apiRoutes.js';

export type SuppressionRouteName = 'listSuppressions' | 'putSuppression' | 'deleteSuppression';

export const SUPPRESSION_ROUTES: readonly (ApiRoute & { readonly name: SuppressionRouteName })[] = [
  { name: 'listSuppressions', method: 'GET', path: '/v1/suppressions', authorized: true },
  { name: 'putSuppression', method: 'PUT', path: '/v1/suppressions/{address}', authorized: true },
  { name: 'deleteSuppression', method: 'DELETE', path: '/v1/suppressions/{address}', authorized: true },
];
