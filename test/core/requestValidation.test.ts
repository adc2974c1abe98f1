import { describe, expect, it } from 'vitest';
import { type EnqueueContext, validateEnqueueRequest } from '../../lambdas/core/enqueueRequest.js';
import { validateGroupKey, validateGroupVersionRequest } from '../../lambdas/core/groupRequests.js';
import {
  parseEnqueueRequest,
  parseGroupKey,
  parseGroupVersionRequest,
  parseRescheduleRequest,
} from '../../lambdas/core/messageSchema.js';
import { validationProblem } from '../../lambdas/core/problem.js';
import { validateRescheduleRequest } from '../../lambdas/core/rescheduleRequest.js';

const ctx: EnqueueContext = {
  now: new Date('2026-11-29T18:00:00.000Z'),
  allowedFrom: ['ops@example.com'],
  defaultFrom: 'ops@example.com',
  maxHorizonDays: 400,
};

describe('core validation answers field errors; the parsers wrap them in the 400 problem', () => {
  it('names the fields and reasons, with no HTTP status in the answer', () => {
    const result = validateEnqueueRequest({ to: ['ada@example.com'], subject: 'Hi', text: 'x', bcc: 7 }, ctx);
    expect(result).toEqual({
      ok: false,
      errors: [{ field: '/bcc', message: 'must be an array' }],
    });
  });

  it('gives the same answer through the public parsers, as validationProblem of those errors', () => {
    const bodies: unknown[] = [
      null,
      [],
      { to: ['not an address'], subject: '', text: 'x', extra: 1 },
      { to: ['ada@example.com'], subject: 'Hi', text: 'x', send_at: '2030-01-01T00:00:00Z' },
      { to: ['ada@example.com'], subject: 'Hi', text: 'x' },
    ];
    for (const body of bodies) {
      const validated = validateEnqueueRequest(body, ctx);
      const parsed = parseEnqueueRequest(body, ctx);
      expect(parsed).toEqual(
        validated.ok ? validated : { ok: false, problem: validationProblem(validated.errors) },
      );
      const reschedule = validateRescheduleRequest(body, ctx);
      expect(parseRescheduleRequest(body, ctx)).toEqual(
        reschedule.ok ? reschedule : { ok: false, problem: validationProblem(reschedule.errors) },
      );
      const version = validateGroupVersionRequest(body);
      expect(parseGroupVersionRequest(body)).toEqual(
        version.ok ? version : { ok: false, problem: validationProblem(version.errors) },
      );
    }
    for (const key of ['campaign:42', ' padded', '']) {
      const validated = validateGroupKey(key);
      expect(parseGroupKey(key)).toEqual(
        validated.ok ? validated : { ok: false, problem: validationProblem(validated.errors) },
      );
    }
  });
});
