/** GET /health: public, answers without touching the store. */

import type { RouteHandler } from '../route.js';
import { jsonResult } from '../route.js';

export function healthRoute(): RouteHandler {
  return async function health() {
    return jsonResult(200, { status: 'ok' });
  };
}
