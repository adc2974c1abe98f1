import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DeadLetterPayload } from '../core/dispatchPayload.js';
import { lifetimeChange, type TtlWrite } from '../core/messageLifetime.js';
import { isWaitingForOperator, MESSAGE_STATUS, type MessageStatus } from '../core/messageStatus.js';
import { isLiveSide } from '../core/testSide.js';
import type {
  ClaimInput,
  HoldInput,
  OutcomeInput,
  ReleaseInput,
  SenderStore,
  SenderWriteResult,
  SettleScreenedInput,
  SettleUnsentInput,
} from '../ports/SenderStore.js';
import type { SuppressionList } from '../ports/SuppressionList.js';
import { bodyOfStoredItem, inlineBodyOf } from './bodyContent.js';
import { finishBodyLifetime, takingBodyBack } from './bodyLifetime.js';
import { recordDeadLetterPut } from './deadLetterEntry.js';
import { type GroupHeadReplicas, readGroupHeadVersion } from './groupHead.js';
import {
  type AttemptRecord,
  byStatusPk,
  duePk,
  isMessageBodyRecord,
  isMessageStateRecord,
  type MessageBodyRecord,
  type MessageStateRecord,
  messagePk,
  uncopiedDeadPk,
  waitingPk,
} from './messageRecord.js';
import { readState, type StateRead } from './stateReads.js';
import { DynamoSuppressionList, type SuppressionLookups } from './suppressionList.js';
import { ITEM_SORT_KEY, KEY, TTL_ATTRIBUTE } from './tableLayout.js';

/**
 * The DynamoDB adapter of the SenderStore port (ports/SenderStore.ts): the sender's reads and its conditional writes on the state record (docs/data-model.md,
 * "Transitions and their writers"). Every write is one `UpdateItem` whose condition is the state the
 * sender saw: same `rev`, same `status`, same TTL, and while `sending` the same lease owner (and, for
 * someone else's lease, that it has expired). A write that loses its condition changes nothing and comes
 * back as `conflict`, never as an exception.
 */

/** The attempt history keeps the newest entries only, so the state record stays near 1 KB. */
export const HISTORY_LIMIT = 20;

export class DynamoSenderStore implements SenderStore {
  readonly suppressions: SuppressionList;

  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly tableName: string,
    /**
     * The group head's replicas (POSTDATE_GROUP_HEAD_REPLICAS) and the randomness that picks one
     * (and jitters the list's reads); how long the list's lookups are kept (decision 0173).
     */
    private readonly groupHeads: GroupHeadReplicas & {
      readonly suppressionLookups?: SuppressionLookups;
    } = {},
  ) {
    this.suppressions = new DynamoSuppressionList(documents, tableName, {
      recent: groupHeads.suppressionLookups ?? {},
      ...(groupHeads.random === undefined ? {} : { random: groupHeads.random }),
    });
  }

  readState(id: string): Promise<StateRead | undefined> {
    return readState(this.documents, this.tableName, id);
  }

  async readBody(state: MessageStateRecord): Promise<MessageBodyRecord | undefined> {
    // A small message's body is inside its state record (docs/data-model.md): no request.
    const inline = inlineBodyOf(state);
    if (inline !== undefined) return isMessageBodyRecord(inline) ? inline : undefined;
    const { id } = state;
    const { Item } = await this.documents.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageBody },
        ConsistentRead: true,
      }),
    );
    const body = Item === undefined ? undefined : bodyOfStoredItem(Item, id);
    return isMessageBodyRecord(body) ? body : undefined;
  }

  async readGroupVersion(tenant: string, groupKey: string): Promise<number | undefined> {
    // One replica at random, consistently: the freshness check before a send (store/groupHead.ts).
    const { groupHeadReplicas: replicas, random } = this.groupHeads;
    const reading = { consistent: true, replicas, random };
    return (
      (await readGroupHeadVersion(this.documents, this.tableName, tenant, groupKey, reading)) ?? undefined
    );
  }

  async claim(input: ClaimInput): Promise<SenderWriteResult> {
    const { observed, now } = input;
    // A redriven `dead` message an operator had discarded ends no more: its body's TTL comes off
    // before the claim and again after it (store/bodyLifetime.ts `takingBodyBack`), so that neither a
    // crash nor a discard's late body write leaves a live message whose body can expire.
    const lifetime = lifetimeChange({
      currentExpiresAt: observed.expires_at,
      to: MESSAGE_STATUS.sending,
      tenant: observed.tenant,
      now,
      retentionDays: 0, // unused: a claim never starts the retention
      bodyInState: observed.body !== undefined,
    });
    const update = new UpdateBuilder(observed, now);
    update.set('status', MESSAGE_STATUS.sending);
    update.set('lst_pk', byStatusPk(observed.tenant, MESSAGE_STATUS.sending, observed.id));
    update.set('lease_owner', input.owner);
    update.set('lease_until', input.leaseUntil.toISOString());
    if (input.relay !== undefined) update.set('lease_relay', input.relay);
    if (observed.due_pk !== duePk(observed.id) || observed.due_at === undefined) {
      // A redriven `dead` record leaves its waiting partition for the sweeper's.
      update.set('due_pk', duePk(observed.id));
      update.set('due_at', input.leaseUntil.toISOString());
    }
    // Otherwise the `due` entry stays where it was: moving its sort key costs a delete and a put in
    // the index, and the sweeper reads a sending record's lease (core/sweepDecision.ts). The stall the
    // sweeper may have counted on it ends here, so its count starts again (docs/data-model.md).
    update.remove('sweep_due_at');
    update.remove('sweep_count');
    update.set('updated_at', now.toISOString());
    if (input.attemptLimit !== undefined) update.set('attempt_limit', input.attemptLimit);
    // A redriven `dead` record was terminal: it leaves any TTL and its death (its DLQ copy, its
    // name) behind and rejoins the due index.
    update.remove(TTL_ATTRIBUTE);
    update.remove('dead_copy');
    update.remove('death');
    return await takingBodyBack(
      this.documents,
      this.tableName,
      observed.id,
      lifetime.body,
      () => this.apply(update),
      (result) => result.outcome === 'applied',
    );
  }

  recordOutcome(input: OutcomeInput): Promise<SenderWriteResult> {
    const { claimed, now } = input;
    const update = leaveSending(claimed, now, input.to, input.owner);
    // An outcome that is no attempt and leaves the message retrying (an outage, a throttle) is its
    // last error only: the history and the relay stay as its attempts left them (decision 0175).
    if (input.joinsHistory) update.set('history', cappedHistory(claimed.history, input.attempt));
    update.set('last_error', input.lastError);
    update.set('attempts', input.attempts);
    update.set('rcpt_accepted', [...input.recipients.accepted]);
    update.set('rcpt_rejected', [...input.recipients.rejected]);
    if (input.recipients.suppressed !== undefined) {
      update.set('rcpt_suppressed', [...input.recipients.suppressed]);
    }
    if (input.to === MESSAGE_STATUS.sent) update.set('sent_at', input.attempt.at);
    const named = input.joinsHistory ? namedRelay(claimed, input.attempt) : undefined;
    if (named !== undefined) {
      update.set('relay', named.relay);
      if (named.providerMessageId === undefined) update.remove('provider_message_id');
      else update.set('provider_message_id', named.providerMessageId);
    }
    if (input.to === MESSAGE_STATUS.dead) nameDeath(update, input.attempts, input.deadCopy);
    if (input.to === MESSAGE_STATUS.retrying) {
      update.set('due_at', (input.retryAt ?? now).toISOString());
      return this.apply(update);
    }
    const body = this.becomeTerminal(update, claimed, input.to, now, input.retentionDays);
    return this.applyWithBody(update, body);
  }

  release(input: ReleaseInput): Promise<SenderWriteResult> {
    const { claimed, now } = input;
    const update = leaveSending(claimed, now, input.to, input.owner);
    // Due again when the copy comes back, for the sweeper too (a `scheduled` one's copy goes at
    // once then: core/sendDecision.ts `sendableAt` reads its `send_at`).
    update.set('due_at', input.retryAt.toISOString());
    return this.apply(update);
  }

  settleUnsent(input: SettleUnsentInput): Promise<SenderWriteResult> {
    const { observed, now } = input;
    const update = leaveSending(observed, now, input.to, input.owner);
    if (input.interruptedAttempt !== undefined) {
      // The sender that died may have reached the relay: its attempt counts (DESIGN §2).
      update.set('attempts', (observed.attempts ?? 0) + 1);
      update.set('history', cappedHistory(observed.history, input.interruptedAttempt));
      // It went through the relay its lease names (DESIGN §15): the view says so as for a live attempt.
      const named = namedRelay(observed, input.interruptedAttempt);
      if (named !== undefined) {
        update.set('relay', named.relay);
        update.remove('provider_message_id');
      }
    }
    if (input.lastError !== undefined) update.set('last_error', input.lastError);
    if (input.to === MESSAGE_STATUS.dead) {
      const attempts = (observed.attempts ?? 0) + (input.interruptedAttempt === undefined ? 0 : 1);
      nameDeath(update, attempts, input.deadCopy);
    }
    if (input.to === MESSAGE_STATUS.retrying) {
      // An interrupted attempt under `retry`: waiting again, due at once, in the sweeper's index.
      update.set('due_pk', duePk(observed.id));
      update.set('due_at', now.toISOString());
      return this.apply(update);
    }
    const body = this.becomeTerminal(update, observed, input.to, now, input.retentionDays);
    return this.applyWithBody(update, body);
  }

  hold(input: HoldInput): Promise<SenderWriteResult> {
    // Only `due_at` moves (the sweeper's index); the record is otherwise as it was: no attempt.
    const update = new UpdateBuilder(input.observed, input.now);
    update.set('due_pk', duePk(input.observed.id));
    update.set('due_at', input.until.toISOString());
    return this.apply(update);
  }

  settleScreened(input: SettleScreenedInput): Promise<SenderWriteResult> {
    const { claimed, now } = input;
    // No attempt: attempts and history stay as the earlier attempts left them, and `last_error` too
    // unless the ending shows none (a `sent` message, decision 0223).
    const update = leaveSending(claimed, now, input.to, input.owner);
    if (!input.showsLastError) update.set('last_error', null);
    update.set('rcpt_accepted', [...input.recipients.accepted]);
    update.set('rcpt_rejected', [...input.recipients.rejected]);
    update.set('rcpt_suppressed', [...(input.recipients.suppressed ?? [])]);
    if (input.to === MESSAGE_STATUS.sent) {
      // Sent by an earlier attempt (the one whose 250 accepted the others): its time is the send's.
      const delivered = [...(claimed.history ?? [])].reverse().find((entry) => entry.outcome === 'sent');
      update.set('sent_at', delivered?.at ?? now.toISOString());
    }
    const body = this.becomeTerminal(update, claimed, input.to, now, input.retentionDays);
    return this.applyWithBody(update, body);
  }

  finishBodyLifetime(state: MessageStateRecord): Promise<void> {
    return finishBodyLifetime(this.documents, this.tableName, state);
  }

  recordDeadLetter(letter: DeadLetterPayload): Promise<'recorded' | 'moved-on'> {
    return recordDeadLetterPut(this.documents, this.tableName, letter);
  }

  /**
   * Terminal records leave the sweeper's part of the `due` index (docs/data-model.md). A live one that
   * waits for an operator (`failed`, `dead`, `unknown`) moves to the waiting partition of its status and,
   * like every message that has not ended, has no TTL; a final one, and a test-side one that nobody
   * waits for, leaves the index and starts its retention (core/messageLifetime.ts). Answers what the
   * body's TTL must become.
   */
  private becomeTerminal(
    update: UpdateBuilder,
    observed: MessageStateRecord,
    to: MessageStatus,
    now: Date,
    retentionDays: number,
  ): TtlWrite {
    const lifetime = lifetimeChange({
      currentExpiresAt: observed.expires_at,
      to,
      tenant: observed.tenant,
      now,
      retentionDays,
      bodyInState: observed.body !== undefined,
    });
    if (isWaitingForOperator(to) && isLiveSide(observed.tenant)) {
      // It waits in the `due` index's waiting partition of its status, since now: the sweeper counts
      // these into the gauge whose alarm stays on while any exists. A test message never does (DESIGN
      // §14: it moves no live alarm); the API and its events tell its state. A `dead` one waits first
      // where its DLQ copy is owed, until the copy's put is recorded (store/deadLetterEntry.ts).
      update.set(
        'due_pk',
        to === MESSAGE_STATUS.dead ? uncopiedDeadPk(observed.id) : waitingPk(to, observed.id),
      );
      update.set('due_at', now.toISOString());
    } else {
      update.remove('due_pk');
      update.remove('due_at');
    }
    if (lifetime.state.kind === 'set') update.set(TTL_ATTRIBUTE, lifetime.state.expiresAt);
    else if (lifetime.state.kind === 'remove') update.remove(TTL_ATTRIBUTE);
    return lifetime.body;
  }

  /**
   * The state update, then the body's TTL. The state goes first: the body's TTL is set only for a
   * transition that happened (a body given a TTL for a lost one would expire under a live message).
   * A failure between the two leaves a body without a TTL — it outlives its message, it never
   * leaves a message without its body — and throws; the sender's retry finds its own state write
   * and finishes the body's (`finishBodyLifetime`). A removal never comes here: it goes around the
   * state write (claim, `takingBodyBack`).
   */
  private async applyWithBody(update: UpdateBuilder, body: TtlWrite): Promise<SenderWriteResult> {
    const result = await this.apply(update);
    if (result.outcome === 'applied' && body.kind === 'set')
      await finishBodyLifetime(this.documents, this.tableName, result.record);
    return result;
  }

  private async apply(update: UpdateBuilder): Promise<SenderWriteResult> {
    try {
      const { Attributes } = await this.documents.send(
        new UpdateCommand({ TableName: this.tableName, ...update.build(), ReturnValues: 'ALL_NEW' }),
      );
      if (!isMessageStateRecord(Attributes)) throw new Error('the updated state record is unreadable');
      return { outcome: 'applied', record: Attributes };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return { outcome: 'conflict' };
      throw error;
    }
  }
}

/**
 * Builds one UpdateItem whose condition is "the record is still as observed": same rev, status and
 * TTL, and for a `sending` record the same lease owner — and, unless it is our own lease, a lease that has
 * expired by `now` (a live lease belongs to a sender still at work).
 */
class UpdateBuilder {
  private readonly sets: string[] = [];
  private readonly removes: string[] = [];
  private readonly names: Record<string, string> = {};
  private readonly values: Record<string, unknown> = {};
  private readonly conditions: string[] = [];
  private ownLease = false;

  constructor(
    private readonly observed: MessageStateRecord,
    private readonly now: Date,
  ) {
    this.conditions.push('attribute_exists(#pk)', '#rev = :observedRev', '#status = :observedStatus');
    this.names['#pk'] = KEY.partition;
    this.names['#rev'] = 'rev';
    this.names['#status'] = 'status';
    this.values[':observedRev'] = observed.rev;
    this.values[':observedStatus'] = observed.status;
    // An operator's discard moves neither rev nor status, only the TTL: a write decided on a read
    // from before it (a redrive's claim, which decides the body's TTL from that read) must lose.
    this.names[`#${TTL_ATTRIBUTE}`] = TTL_ATTRIBUTE;
    if (observed.expires_at === undefined) {
      this.conditions.push(`attribute_not_exists(#${TTL_ATTRIBUTE})`);
    } else {
      this.conditions.push(`#${TTL_ATTRIBUTE} = :observedTtl`);
      this.values[':observedTtl'] = observed.expires_at;
    }
  }

  /** The write is ours only while we hold the lease (the outcome of our own send). */
  requireLeaseOwner(owner: string): void {
    this.ownLease = true;
    this.conditions.push('#lease_owner = :owner');
    this.names['#lease_owner'] = 'lease_owner';
    this.values[':owner'] = owner;
  }

  set(attribute: string, value: unknown): void {
    const name = this.name(attribute);
    const placeholder = `:v_${attribute}`;
    this.values[placeholder] = value;
    this.sets.push(`${name} = ${placeholder}`);
  }

  setExpression(attribute: string, expression: string, values: Record<string, unknown>): void {
    const name = this.name(attribute);
    Object.assign(this.values, values);
    this.sets.push(`${name} = ${expression}`);
  }

  remove(attribute: string): void {
    this.removes.push(this.name(attribute));
  }

  build() {
    const conditions = [...this.conditions];
    if (this.observed.status === MESSAGE_STATUS.sending && !this.ownLease) {
      // Someone else's lease: only an expired one may be taken over or settled.
      conditions.push('#lease_owner = :previousOwner', '#lease_until < :now');
      this.names['#lease_owner'] = 'lease_owner';
      this.names['#lease_until'] = 'lease_until';
      this.values[':previousOwner'] = this.observed.lease_owner ?? '';
      this.values[':now'] = this.now.toISOString();
    }
    const expression = [`SET ${this.sets.join(', ')}`];
    if (this.removes.length > 0) expression.push(`REMOVE ${this.removes.join(', ')}`);
    return {
      Key: { [KEY.partition]: this.observed.pk, [KEY.sort]: ITEM_SORT_KEY.messageState },
      UpdateExpression: expression.join(' '),
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeNames: { ...this.names },
      ExpressionAttributeValues: { ...this.values },
    };
  }

  private name(attribute: string): string {
    const name = `#${attribute}`;
    this.names[name] = attribute;
    return name;
  }
}

/**
 * The start of every write that moves a record out of `sending` (or settles one that never got
 * there): the new status and its index key, the time, and no lease. With `owner`, only the holder
 * of that lease may write it.
 */
function leaveSending(
  observed: MessageStateRecord,
  now: Date,
  to: MessageStateRecord['status'],
  owner: string | undefined,
): UpdateBuilder {
  const update = new UpdateBuilder(observed, now);
  if (owner !== undefined) update.requireLeaseOwner(owner);
  update.set('status', to);
  update.set('lst_pk', byStatusPk(observed.tenant, to, observed.id));
  update.set('updated_at', now.toISOString());
  update.remove('lease_owner');
  update.remove('lease_until');
  update.remove('lease_relay');
  return update;
}

/**
 * The death write's own part: the copy whose move to the DLQ it owes (`dead_copy`), and the death's
 * name (`death`: the attempts it died with), which its DLQ copy carries too, so that only that copy
 * redrives it (core/sendDecision.ts `redrivesDeath`, decision 0149).
 */
function nameDeath(update: UpdateBuilder, attempts: number, deadCopy: string | undefined): void {
  if (deadCopy !== undefined) update.set('dead_copy', deadCopy);
  update.set('death', attempts);
}

/**
 * The relay and the relay's id the message view names after this attempt, both from one attempt
 * (DESIGN §15; docs/decisions/0124-relay-and-its-id-from-one-attempt.md): an attempt the relay
 * accepted names its own; another attempt through a relay does only while none has been accepted
 * (`rcpt_accepted` is empty). Undefined: the pair stays as an earlier attempt left it.
 */
function namedRelay(
  claimed: MessageStateRecord,
  attempt: AttemptRecord,
): { readonly relay: string; readonly providerMessageId?: string } | undefined {
  if (attempt.relay === undefined) return undefined;
  if (attempt.outcome !== 'sent' && (claimed.rcpt_accepted?.length ?? 0) > 0) return undefined;
  return attempt.provider_message_id === undefined
    ? { relay: attempt.relay }
    : { relay: attempt.relay, providerMessageId: attempt.provider_message_id };
}

function cappedHistory(history: readonly AttemptRecord[] | undefined, entry: AttemptRecord): AttemptRecord[] {
  return [...(history ?? []), entry].slice(-HISTORY_LIMIT);
}
