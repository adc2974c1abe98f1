/**
 * The enqueue request (DESIGN §3): the structural parse by the schema, then the rules that need
 * configuration or the clock (allowed senders, the horizon, "a past send_at means now", `not_after`
 * after the effective `send_at`). The answer is the canonical request or every bad field; nothing
 * here throws on any input.
 */
import { isAllowedSender, parseAddress } from './addresses.js';
import { fingerprint } from './fingerprint.js';
import {
  type FieldError,
  guarded,
  illFormedStringErrors,
  PARSE_CONTEXT,
  prototypeKeyErrors,
  type Validated,
  zodErrors,
} from './problem.js';
import { EnqueueBodySchema } from './requestSchemas.js';
import { rawData } from './templateRequests.js';
import { horizonEndMs, parseZonedTimestamp } from './timestamps.js';

export interface GroupRef {
  readonly key: string;
  readonly version: number;
}

/** A validated enqueue request, normalized (defaults applied, times in ISO-8601 UTC with ms). */
export interface EnqueueRequest {
  readonly to: readonly string[];
  readonly cc: readonly string[];
  readonly bcc: readonly string[];
  readonly from: string;
  readonly reply_to: string | null;
  /** The inline subject; '' for a template message, whose subject is rendered from the template. */
  readonly subject: string;
  readonly text: string | null;
  readonly html: string | null;
  /**
   * The template the message names (DESIGN §10), with the version the client asked for (null: the
   * latest at enqueue time, which the records pin); null or absent for an inline message (absent
   * keeps requests built by hand before templates existed valid).
   */
  readonly template?: TemplateRequestRef | null;
  /** The template's data (`{}` when the request gave none); null or absent for an inline message. */
  readonly data?: Readonly<Record<string, unknown>> | null;
  readonly headers: Readonly<Record<string, string>>;
  /** The `send_at` the client asked for (normalized), or null. Part of the fingerprint. */
  readonly requested_send_at: string | null;
  /** The `delay_seconds` the client asked for, or null. Part of the fingerprint. */
  readonly delay_seconds: number | null;
  /** The effective send time, resolved against the clock: never in the past. NOT part of the fingerprint. */
  readonly send_at: string;
  readonly not_after: string | null;
  readonly group: GroupRef | null;
  readonly on_ambiguous: 'retry' | 'hold';
  readonly tags: Readonly<Record<string, string>>;
  readonly metadata: Readonly<Record<string, string>>;
}

/** A template named by an enqueue: the version is the one asked for, or null for the latest. */
export interface TemplateRequestRef {
  readonly name: string;
  readonly version: number | null;
}

export interface EnqueueContext {
  readonly now: Date;
  /** POSTDATE_ALLOWED_FROM patterns. */
  readonly allowedFrom: readonly string[];
  /** POSTDATE_DEFAULT_FROM. */
  readonly defaultFrom: string;
  /** POSTDATE_MAX_HORIZON_DAYS. */
  readonly maxHorizonDays: number;
}

/**
 * What an idempotency fingerprint covers: the canonical request without the effective send time,
 * which depends on the clock (a replay a second later must still match).
 */
export function fingerprintSource(
  request: EnqueueRequest,
): Omit<EnqueueRequest, 'send_at' | 'template' | 'data'> &
  Partial<Pick<EnqueueRequest, 'template' | 'data'>> {
  const { send_at: _effective, template, data, ...rest } = request;
  // An inline request hashes exactly as it did before templates existed: its stored fingerprints
  // still recognise its replays.
  return template == null ? rest : { ...rest, template, data: data ?? {} };
}

/** The fingerprint stored on the body and the state record: SHA-256 of the canonical request minus its clock-derived send time. */
export function requestFingerprint(request: EnqueueRequest): string {
  return fingerprint(fingerprintSource(request));
}

/** Validates an enqueue body against every rule of DESIGN §3. Never throws. */
export function validateEnqueueRequest(body: unknown, ctx: EnqueueContext): Validated<EnqueueRequest> {
  return guarded(() => {
    const parsed = EnqueueBodySchema.safeParse(body, PARSE_CONTEXT);
    const hidden = [...prototypeKeyErrors(body), ...illFormedStringErrors(body)];
    if (!parsed.success || hidden.length > 0) {
      return { ok: false, errors: parsed.success ? hidden : [...zodErrors(parsed.error), ...hidden] };
    }
    const input = parsed.data;
    const errors: FieldError[] = [];
    const nowMs = ctx.now.getTime();
    const horizonMs = horizonEndMs(ctx.now, ctx.maxHorizonDays);

    const from = input.from?.trim() || ctx.defaultFrom;
    const fromAddress = parseAddress(from);
    if (!fromAddress.ok) errors.push({ field: '/from', message: fromAddress.reason });
    else if (!isAllowedSender(fromAddress.value.address, ctx.allowedFrom))
      errors.push({ field: '/from', message: 'is not an allowed sender (POSTDATE_ALLOWED_FROM)' });

    let requestedSendAt: string | null = null;
    let sendAtMs = nowMs;
    if (input.send_at != null) {
      const at = parseZonedTimestamp(input.send_at);
      if (at) {
        requestedSendAt = at.toISOString();
        sendAtMs = Math.max(nowMs, at.getTime());
        if (at.getTime() > horizonMs)
          errors.push({ field: '/send_at', message: `must be at most ${ctx.maxHorizonDays} days ahead` });
      }
    } else if (input.delay_seconds != null) {
      sendAtMs = nowMs + input.delay_seconds * 1000;
      if (sendAtMs > horizonMs)
        errors.push({ field: '/delay_seconds', message: `must be at most ${ctx.maxHorizonDays} days` });
    }

    let notAfter: string | null = null;
    if (input.not_after != null) {
      const deadline = parseZonedTimestamp(input.not_after);
      if (deadline) {
        notAfter = deadline.toISOString();
        if (deadline.getTime() <= sendAtMs)
          errors.push({ field: '/not_after', message: 'must be after send_at (and in the future)' });
      }
    }
    if (errors.length > 0) return { ok: false, errors };

    return {
      ok: true,
      value: {
        to: trimAll(input.to),
        cc: trimAll(input.cc),
        bcc: trimAll(input.bcc),
        from,
        reply_to: input.reply_to?.trim() || null,
        subject: input.subject ?? '',
        text: input.text || null,
        html: input.html || null,
        // Only a template message carries these: an inline request stays exactly what it was.
        ...(input.template
          ? {
              template: { name: input.template.name, version: input.template.version ?? null },
              data: rawData(body),
            }
          : {}),
        headers: { ...input.headers },
        requested_send_at: requestedSendAt,
        delay_seconds: input.send_at == null ? (input.delay_seconds ?? null) : null,
        send_at: new Date(sendAtMs).toISOString(),
        not_after: notAfter,
        group: input.group ? { key: input.group.key, version: input.group.version } : null,
        on_ambiguous: input.on_ambiguous ?? 'retry',
        tags: { ...input.tags },
        metadata: { ...input.metadata },
      },
    };
  });
}

function trimAll(list: readonly string[] | null | undefined): string[] {
  return (list ?? []).map((address) => address.trim());
}
