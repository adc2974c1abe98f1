/** The reschedule request `{ send_at }` (PATCH /v1/messages/{id}): a new send time within the horizon. */
import { guarded, PARSE_CONTEXT, type Validated, zodErrors } from './problem.js';
import { RescheduleBodySchema } from './requestSchemas.js';
import { horizonEndMs, parseZonedTimestamp } from './timestamps.js';

export interface RescheduleRequest {
  /** The effective new send time (a past time means now), ISO-8601 UTC with ms. */
  readonly send_at: string;
}

/** Validates a reschedule body `{ send_at }`. Never throws. */
export function validateRescheduleRequest(
  body: unknown,
  ctx: { readonly now: Date; readonly maxHorizonDays: number },
): Validated<RescheduleRequest> {
  return guarded(() => {
    const parsed = RescheduleBodySchema.safeParse(body, PARSE_CONTEXT);
    if (!parsed.success) return { ok: false, errors: zodErrors(parsed.error) };
    const at = parseZonedTimestamp(parsed.data.send_at);
    if (!at) return { ok: false, errors: [{ field: '/send_at', message: 'is invalid' }] };
    if (at.getTime() > horizonEndMs(ctx.now, ctx.maxHorizonDays)) {
      return {
        ok: false,
        errors: [{ field: '/send_at', message: `must be at most ${ctx.maxHorizonDays} days ahead` }],
      };
    }
    return {
      ok: true,
      value: { send_at: new Date(Math.max(ctx.now.getTime(), at.getTime())).toISOString() },
    };
  });
}
