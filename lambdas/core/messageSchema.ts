/**
 * The public entry of request validation (DESIGN §3), for the API, the outbox helper and
 * applications (docs/api.md, "The transactional outbox"): each parser turns an untrusted JSON body
 * into a canonical, validated request or a 400 problem naming every bad field. Nothing here throws
 * on any input, and no error message echoes a value (problems are logged, and values may be
 * addresses).
 *
 * The rules live in rooms of one idea, which the rest of the code imports directly:
 * - requestLimits.ts — the limits; addresses.ts — mailboxes and allowed senders;
 *   timestamps.ts — zoned date-times and the horizon; headerSafety.ts — CR/LF, control characters,
 *   reserved and relay-control headers;
 * - requestSchemas.ts — the zod schemas (also the OpenAPI schemas);
 * - enqueueRequest.ts, rescheduleRequest.ts, groupRequests.ts — the validations, which answer
 *   field errors (fieldErrors.ts; zod's issues mapped by zodFieldErrors.ts, what zod cannot see by
 *   hiddenInputErrors.ts).
 *
 * Pure: no AWS SDK, no network, the clock is an argument.
 */
import { type EnqueueContext, type EnqueueRequest, validateEnqueueRequest } from './enqueueRequest.js';
import { type GroupVersionRequest, validateGroupKey, validateGroupVersionRequest } from './groupRequests.js';
import type { Validated } from './problem.js';
import { type ProblemDetails, validationProblem } from './problem.js';
import { type RescheduleRequest, validateRescheduleRequest } from './rescheduleRequest.js';

export { type AddressParse, isAllowedSender, type ParsedAddress, parseAddress } from './addresses.js';
export {
  type EnqueueContext,
  type EnqueueRequest,
  fingerprintSource,
  type GroupRef,
} from './enqueueRequest.js';
export type { GroupVersionRequest } from './groupRequests.js';
export { RELAY_CONTROL_HEADERS, RELAY_CONTROL_MESSAGE, RESERVED_HEADERS } from './headerSafety.js';
export { zodErrors } from './problem.js';
export { LIMITS } from './requestLimits.js';
export {
  EnqueueBodySchema,
  GroupKeySchema,
  GroupVersionBodySchema,
  RescheduleBodySchema,
} from './requestSchemas.js';
export type { RescheduleRequest } from './rescheduleRequest.js';
export { parseZonedTimestamp } from './timestamps.js';

export type Parsed<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly problem: ProblemDetails };

/** Validates an enqueue body against every rule of DESIGN §3. Never throws. */
export function parseEnqueueRequest(body: unknown, ctx: EnqueueContext): Parsed<EnqueueRequest> {
  return withProblem(validateEnqueueRequest(body, ctx));
}

/** Validates a reschedule body `{ send_at }`. Never throws. */
export function parseRescheduleRequest(
  body: unknown,
  ctx: { readonly now: Date; readonly maxHorizonDays: number },
): Parsed<RescheduleRequest> {
  return withProblem(validateRescheduleRequest(body, ctx));
}

/** Validates a group version body `{ version }`. Never throws. */
export function parseGroupVersionRequest(body: unknown): Parsed<GroupVersionRequest> {
  return withProblem(validateGroupVersionRequest(body));
}

/** Validates a group key taken from a URL path. Never throws. */
export function parseGroupKey(key: string): Parsed<string> {
  return withProblem(validateGroupKey(key));
}

function withProblem<T>(validated: Validated<T>): Parsed<T> {
  return validated.ok ? validated : { ok: false, problem: validationProblem(validated.errors) };
}
