/**
 * The webhook routes of DESIGN §3 (spread into API_ROUTES, core/apiRoutes.ts). Their handlers are
 * lambdas/api/routes/webhooks.ts; their OpenAPI operations lambdas/api/openapi/webhookOperations.ts.
 */
import type { ApiRoute } from './apiRoutes.js';

export type WebhookRouteName =
  | 'createWebhook'
  | 'listWebhooks'
  | 'getWebhook'
  | 'deleteWebhook'
  | 'testWebhook'
  | 'rotateWebhookSecret'
  | 'listWebhookDeliveries'
  | 'retryWebhookDelivery';

export const WEBHOOK_API_ROUTES: readonly (ApiRoute & { readonly name: WebhookRouteName })[] = [
  { name: 'createWebhook', method: 'POST', path: '/v1/webhooks', authorized: true },
  { name: 'listWebhooks', method: 'GET', path: '/v1/webhooks', authorized: true },
  { name: 'getWebhook', method: 'GET', path: '/v1/webhooks/{id}', authorized: true },
  { name: 'deleteWebhook', method: 'DELETE', path: '/v1/webhooks/{id}', authorized: true },
  { name: 'testWebhook', method: 'POST', path: '/v1/webhooks/{id}/test', authorized: true },
  {
    name: 'rotateWebhookSecret',
    method: 'POST',
    path: '/v1/webhooks/{id}/rotate-secret',
    authorized: true,
  },
  { name: 'listWebhookDeliveries', method: 'GET', path: '/v1/webhooks/{id}/deliveries', authorized: true },
  {
    name: 'retryWebhookDelivery',
    method: 'POST',
    path: '/v1/webhooks/{id}/deliveries/{delivery}/retry',
    authorized: true,
  },
];
