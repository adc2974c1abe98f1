import type { LocalStack } from '../../local/localStack.js';

/**
 * A call of a local stack's HTTP API with its key (and an Idempotency-Key when given): the status and
 * the JSON answer, read by its documented shape.
 */
export async function callApi(
  stack: LocalStack,
  method: string,
  path: string,
  body?: unknown,
  idempotencyKey?: string,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${stack.apiUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${stack.apiKey}`,
      'content-type': 'application/json',
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}
