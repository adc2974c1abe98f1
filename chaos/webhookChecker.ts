import { TERMINAL_STATUSES } from './checker.js';
import type { ReceivedWebhook } from './webhookReceiver.js';

/**
 * The webhook checker of the chaos run (DESIGN §11, issue 20). Its input is what the harness itself
 * saw: the messages each tenant's client had accepted and what the client observed of each (its
 * final status and the attempts of its history, whose fate the main checker already holds against
 * the SMTP tap and the injected faults), and every POST the receiver got, with the answer the
 * receiver chose (200, 500 or a stall) and whether its signature verified. Never Postdate's own
 * account of its deliveries. Per message it requires that each status change it went through
 * reached its tenant's endpoint at least once in a POST the receiver answered 200:
 *
 * - acceptance (`previous_status` null: `scheduled`, or `superseded` by a group raised before);
 * - `retrying`, when its history has a transient (or config-class) attempt followed by another: that
 *   outcome's write is the move to `retrying` (DESIGN §2; at the last allowed attempt it is `dead`,
 *   and then no attempt follows). An ambiguous attempt followed by another proves nothing: a lease
 *   taken over after a kill records the interrupted attempt as ambiguous and stays `sending`;
 * - its final status, when terminal.
 *
 * And for every POST: the signature verified with the endpoint's secret, `webhook-id` is the event's
 * id, the event is the endpoint's tenant's and names a message that tenant's client had accepted
 * (no event ever reaches another tenant's endpoint), and a terminal status in an event is the
 * message's final one.
 *
 * Pure: no I/O, no clock.
 */

export interface WebhookCheckMessage {
  readonly id: string;
  readonly tenant: string;
  /** The client's last view: null when the API did not know the message. */
  readonly finalStatus: string | null;
  /** The outcomes of that view's history, oldest first. */
  readonly outcomes: readonly string[];
}

export interface WebhookCheckInput {
  readonly tenants: readonly string[];
  readonly messages: readonly WebhookCheckMessage[];
  readonly received: readonly ReceivedWebhook[];
}

export type WebhookProblem =
  | { readonly kind: 'missing'; readonly id: string; readonly reason: string }
  | { readonly kind: 'crossed'; readonly id: string; readonly reason: string }
  | { readonly kind: 'bad-signature'; readonly id: string; readonly reason: string }
  | { readonly kind: 'wrong-event'; readonly id: string; readonly reason: string };

export interface WebhookCheckResult {
  readonly ok: boolean;
  readonly counts: {
    readonly posts: number;
    readonly answered: Readonly<Record<string, number>>;
    /** Status changes the checker required, and how many reached their endpoint. */
    readonly expected: number;
    readonly reached: number;
    readonly missing: number;
    readonly crossed: number;
    readonly badSignatures: number;
    readonly wrongEvents: number;
    /** Events answered 200 more than once (at least once allows it). */
    readonly deliveredMoreThanOnce: number;
  };
  readonly problems: readonly WebhookProblem[];
}

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_STATUSES);
const ACCEPTANCE: ReadonlySet<string> = new Set(['scheduled', 'superseded']);
/** Attempt outcomes whose write moves a message to `retrying` when another attempt is allowed. */
const RETRYING_OUTCOMES: ReadonlySet<string> = new Set(['transient', 'config']);

/** The status changes a message must have been delivered for: [label, matches a delivered event]. */
export function expectedChanges(
  message: WebhookCheckMessage,
): readonly { readonly label: string; readonly matches: (event: ReceivedWebhook) => boolean }[] {
  const changes: { label: string; matches: (event: ReceivedWebhook) => boolean }[] = [
    {
      label: 'acceptance',
      matches: (event) => event.previousStatus === null && ACCEPTANCE.has(event.status ?? ''),
    },
  ];
  const retried = message.outcomes.slice(0, -1).some((outcome) => RETRYING_OUTCOMES.has(outcome));
  if (retried) changes.push({ label: 'retrying', matches: (event) => event.status === 'retrying' });
  const final = message.finalStatus;
  if (final !== null && TERMINAL.has(final)) {
    changes.push({
      label: final,
      matches: (event) => event.status === final && event.previousStatus !== null,
    });
  }
  return changes;
}

export function checkWebhooks(input: WebhookCheckInput): WebhookCheckResult {
  const problems: WebhookProblem[] = [];
  const tenants = new Set(input.tenants);
  const messages = new Map(input.messages.map((message) => [message.id, message]));
  const answered: Record<string, number> = {};
  const delivered = new Map<string, ReceivedWebhook[]>();
  const deliveredIds = new Map<string, number>();

  for (const post of input.received) {
    answered[post.answer] = (answered[post.answer] ?? 0) + 1;
    const id = post.messageId ?? post.eventId ?? '(no id)';
    if (!post.verified) {
      problems.push({
        kind: 'bad-signature',
        id,
        reason: `a POST to ${post.endpointTenant}'s endpoint did not verify: ${post.verifyError ?? '?'}`,
      });
    } else if (post.webhookId !== post.eventId) {
      problems.push({
        kind: 'bad-signature',
        id,
        reason: `webhook-id ${post.webhookId ?? '(none)'} is not the event's id ${post.eventId ?? '(none)'}`,
      });
    }
    const message = post.messageId === null ? undefined : messages.get(post.messageId);
    if (!tenants.has(post.endpointTenant) || post.eventTenant !== post.endpointTenant) {
      problems.push({
        kind: 'crossed',
        id,
        reason: `an event of tenant ${post.eventTenant ?? '(none)'} reached the endpoint of ${post.endpointTenant}`,
      });
      continue;
    }
    if (message === undefined) {
      problems.push({
        kind: 'crossed',
        id,
        reason: `${post.type ?? '(no type)'} for a message ${post.endpointTenant}'s client never had accepted`,
      });
      continue;
    }
    if (message.tenant !== post.endpointTenant) {
      problems.push({
        kind: 'crossed',
        id,
        reason: `an event of ${message.tenant}'s message reached the endpoint of ${post.endpointTenant}`,
      });
      continue;
    }
    if (post.status !== null && TERMINAL.has(post.status) && post.status !== message.finalStatus) {
      problems.push({
        kind: 'wrong-event',
        id,
        reason: `${post.type ?? post.status}, but the message ended ${message.finalStatus ?? '(unknown to the API)'}`,
      });
    }
    if (post.answer !== 'ok' || !post.verified) continue;
    const list = delivered.get(message.id) ?? [];
    list.push(post);
    delivered.set(message.id, list);
    if (post.eventId !== null) deliveredIds.set(post.eventId, (deliveredIds.get(post.eventId) ?? 0) + 1);
  }

  let expected = 0;
  let reached = 0;
  for (const message of input.messages) {
    const events = delivered.get(message.id) ?? [];
    for (const change of expectedChanges(message)) {
      expected += 1;
      if (events.some(change.matches)) reached += 1;
      else
        problems.push({
          kind: 'missing',
          id: message.id,
          reason: `its ${change.label} never reached ${message.tenant}'s endpoint in a POST answered 200 (got: ${
            events.map((event) => event.status).join(', ') || 'none'
          })`,
        });
    }
  }

  const count = (kind: WebhookProblem['kind']) => problems.filter((problem) => problem.kind === kind).length;
  return {
    ok: problems.length === 0,
    counts: {
      posts: input.received.length,
      answered,
      expected,
      reached,
      missing: count('missing'),
      crossed: count('crossed'),
      badSignatures: count('bad-signature'),
      wrongEvents: count('wrong-event'),
      deliveredMoreThanOnce: [...deliveredIds.values()].filter((times) => times > 1).length,
    },
    problems,
  };
}

/** The webhook part of the one-screen report. */
export function formatWebhookReport(result: WebhookCheckResult): string {
  const c = result.counts;
  const answered = Object.entries(c.answered)
    .map(([answer, n]) => `${answer} ${n}`)
    .join(', ');
  const lines = [
    `Postdate chaos webhooks: ${result.ok ? 'PASS' : 'FAIL'}`,
    `  POSTs ${c.posts} (${answered || 'none'})   status changes required ${c.expected}, reached ${c.reached}   delivered more than once ${c.deliveredMoreThanOnce}`,
    `  missing ${c.missing}   crossed tenants ${c.crossed}   bad signatures ${c.badSignatures}   wrong events ${c.wrongEvents}`,
  ];
  for (const kind of ['missing', 'crossed', 'bad-signature', 'wrong-event'] as const) {
    const ofKind = result.problems.filter((problem) => problem.kind === kind);
    if (ofKind.length === 0) continue;
    lines.push(`  ${kind} (${ofKind.length}):`);
    for (const problem of ofKind.slice(0, 5)) lines.push(`    ${problem.id}: ${problem.reason}`);
  }
  return lines.join('\n');
}
