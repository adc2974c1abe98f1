import { type ApiAnswer, type ApiCounters, callApi } from './callApi.js';
import type { ExpectedFate, FinalView } from './checker.js';
import type { CurrentStack } from './currentStack.js';
import { itemsInTable } from './stackStatus.js';
import { datedBody, type PlannedMessage } from './workload.js';

/** A message the API accepted, and what the client was told about it since. */
export interface TrackedMessage {
  readonly planned: PlannedMessage;
  /** The tenant whose key enqueued it (and made every later call about it). */
  readonly tenant: string;
  /** Which stack process answered the enqueue (and the follow-up), with what, when (for the report). */
  acceptedBy: string;
  /** When the message is due, from the enqueue's answer (ms). */
  readonly sendAtMs: number;
  /**
   * The earliest `send_at` the client set: the enqueue's, or a reschedule's it asked for (the PATCH
   * may land even when its answer is lost to a kill), ms. The checker's bound for an early send.
   */
  earliestSendAtMs: number;
  id: string;
  rev: number;
  expectedFate: ExpectedFate;
}

/** A tenant of the run: its name, and its API key (none: the key the stack seeds, tenant `local`). */
export interface ChaosTenant {
  readonly name: string;
  readonly apiKey?: string;
}

/** The client's side of the report: replays, cancels, reschedules and group raises, and how they went. */
export interface ClientFigures {
  replayedEnqueues: number;
  replayMismatches: string[];
  cancelsAccepted: number;
  cancelsRefused: number;
  reschedulesAccepted: number;
  reschedulesRefused: number;
  groupsRaised: number;
  lateGroupRaises: number;
  expiringRefused: number;
}

/**
 * The run's API client: enqueues the workload (replaying some enqueues by their key), follows each
 * message up with its cancel, reschedule or group raise, and reads the final views. The expectation
 * of each message follows what the API answered.
 */
export class ChaosClient {
  /** Every message the API accepted, in the order of its answers. */
  readonly tracked: TrackedMessage[] = [];
  readonly counters: ApiCounters = { retries: 0, serverErrors: 0 };
  readonly figures: ClientFigures = {
    replayedEnqueues: 0,
    replayMismatches: [],
    cancelsAccepted: 0,
    cancelsRefused: 0,
    reschedulesAccepted: 0,
    reschedulesRefused: 0,
    groupsRaised: 0,
    lateGroupRaises: 0,
    expiringRefused: 0,
  };

  /**
   * @param tenants the tenants the messages are spread over, in turn by their index, each with its
   *   API key; by default the one tenant of the key the stack seeds.
   */
  constructor(
    private readonly stacks: CurrentStack,
    private readonly random: () => number,
    private readonly tenants: readonly ChaosTenant[] = [{ name: 'local' }],
  ) {}

  private call(
    tenant: string,
    method: string,
    path: string,
    body: unknown,
    headers: Record<string, string> = {},
  ) {
    const apiKey = this.tenants.find((candidate) => candidate.name === tenant)?.apiKey;
    return callApi(
      this.stacks,
      method,
      path,
      body,
      { ...(apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` }), ...headers },
      this.counters,
    );
  }

  private tenantOf(planned: PlannedMessage): string {
    return this.tenants[planned.index % this.tenants.length]?.name ?? 'local';
  }

  /** One enqueue, by the message's idempotency key (a replay answers the original message). */
  private enqueue(planned: PlannedMessage): Promise<ApiAnswer> {
    return this.call(this.tenantOf(planned), 'POST', '/v1/messages', planned.body, {
      'idempotency-key': planned.key,
    });
  }

  /** Enqueues every planned message, `concurrency` at a time; `onAccepted` after each accepted one. */
  enqueueAll(plans: readonly PlannedMessage[], concurrency: number, onAccepted: () => void): Promise<void> {
    return forEachConcurrently(plans, concurrency, async (plan) => {
      const planned = datedBody(plan);
      const answer = await this.enqueue(planned);
      if (answer.status === 400 && planned.kind === 'expire') {
        // Its 4 s window passed while a kill held the request up: the API rightly refuses a
        // not_after in the past. Not accepted, so not tracked (its recipient never accepts mail).
        this.figures.expiringRefused += 1;
        return;
      }
      if (answer.status !== 202 && answer.status !== 200)
        throw new Error(
          `enqueue #${planned.index} answered ${answer.status}: ${JSON.stringify(answer.body)}`,
        );
      const sendAtMs = Date.parse(String(answer.body.send_at));
      const message: TrackedMessage = {
        planned,
        tenant: this.tenantOf(planned),
        acceptedBy: `${answer.status} from stack process ${answer.pid} after ${answer.tries} tr${answer.tries === 1 ? 'y' : 'ies'} at ${new Date().toISOString()}`,
        sendAtMs,
        earliestSendAtMs: sendAtMs,
        id: String(answer.body.id),
        rev: Number(answer.body.rev ?? 1),
        expectedFate:
          planned.kind === 'supersede' ? 'superseded' : planned.kind === 'expire' ? 'expired' : 'send',
      };
      this.tracked.push(message);
      onAccepted();
      if (this.random() < 0.05) {
        const again = await this.enqueue(planned);
        this.figures.replayedEnqueues += 1;
        if (again.status !== 200 || again.body.id !== message.id)
          this.figures.replayMismatches.push(planned.key);
      }
      await this.followUp(message);
    });
  }

  /** Cancels, reschedules and group raises, right after the enqueue; the expectation follows the answer. */
  private async followUp(message: TrackedMessage): Promise<void> {
    const figures = this.figures;
    switch (message.planned.kind) {
      case 'cancel': {
        const answer = await this.call(message.tenant, 'DELETE', `/v1/messages/${message.id}`, undefined);
        // A 409 saying `cancelled` is our own cancel: its first try landed and its answer was lost
        // to a kill, so the retry found it done (nobody else cancels in this run).
        const ours = answer.status === 409 && answer.body.current_status === 'cancelled';
        if (answer.status === 200 || ours) {
          message.expectedFate = 'cancelled';
          figures.cancelsAccepted += 1;
        } else figures.cancelsRefused += 1;
        return;
      }
      case 'reschedule': {
        const sendAt = new Date(Date.now() + (2 + Math.floor(this.random() * 14)) * 1000).toISOString();
        message.earliestSendAtMs = Math.min(message.earliestSendAtMs, Date.parse(sendAt));
        const answer = await this.call(message.tenant, 'PATCH', `/v1/messages/${message.id}`, {
          send_at: sendAt,
        });
        if (answer.status === 200) {
          message.rev = Number(answer.body.rev ?? message.rev + 1);
          figures.reschedulesAccepted += 1;
        } else figures.reschedulesRefused += 1;
        return;
      }
      case 'supersede': {
        const group = message.planned.body.group as { key: string };
        const answer = await this.call(message.tenant, 'PUT', `/v1/groups/${encodeURIComponent(group.key)}`, {
          version: 2,
        });
        if (answer.status !== 200) throw new Error(`PUT group answered ${answer.status}`);
        figures.groupsRaised += 1;
        message.acceptedBy += `; group raised by process ${answer.pid} at ${new Date().toISOString()}`;
        // The sender checks the group just before sending: a raise the client saw answered only
        // shortly before the message was due (a kill delayed it) may or may not come in time.
        if (Date.now() > message.sendAtMs - 2000) {
          message.expectedFate = 'send-or-superseded';
          figures.lateGroupRaises += 1;
        }
        return;
      }
      default:
        return;
    }
  }

  /**
   * Every accepted message as the API shows it at the end (null when it does not know it: then the
   * message's `acceptedBy` says what the table itself holds).
   */
  async finalViews(concurrency: number): Promise<Record<string, FinalView | null>> {
    const views: Record<string, FinalView | null> = {};
    await forEachConcurrently(this.tracked, concurrency, async (message) => {
      const answer = await this.call(message.tenant, 'GET', `/v1/messages/${message.id}`, undefined);
      if (answer.status !== 200) {
        message.acceptedBy += `; final GET answered ${answer.status}; in the table: ${await itemsInTable(this.stacks, message.id)}`;
      }
      views[message.id] =
        answer.status === 200
          ? {
              id: message.id,
              status: String(answer.body.status),
              history: (answer.body.history as FinalView['history'] | undefined) ?? [],
            }
          : null;
    });
    return views;
  }
}

async function forEachConcurrently<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        const item = items[next];
        next += 1;
        if (item === undefined) return;
        await work(item);
      }
    }),
  );
}
