/** The template routes of DESIGN §3 (§10), as data: spread into API_ROUTES (apiRoutes.ts). */
import type { ApiRoute } from './apiRoutes.js';

export type TemplateRouteName =
  | 'listTemplates'
  | 'putTemplate'
  | 'getTemplate'
  | 'archiveTemplate'
  | 'getTemplateVersion'
  | 'renderTemplate';

export const TEMPLATE_ROUTES: readonly ApiRoute[] = [
  { name: 'listTemplates', method: 'GET', path: '/v1/templates', authorized: true },
  { name: 'putTemplate', method: 'PUT', path: '/v1/templates/{name}', authorized: true },
  { name: 'getTemplate', method: 'GET', path: '/v1/templates/{name}', authorized: true },
  { name: 'archiveTemplate', method: 'DELETE', path: '/v1/templates/{name}', authorized: true },
  {
    name: 'getTemplateVersion',
    method: 'GET',
    path: '/v1/templates/{name}/versions/{version}',
    authorized: true,
  },
  { name: 'renderTemplate', method: 'POST', path: '/v1/templates/{name}/render', authorized: true },
];
