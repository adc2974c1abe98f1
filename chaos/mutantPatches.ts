/**
 * The deliberate bugs of the mutation run (`npm run chaos:mutants`, chaos/mutants.ts): each is a
 * small textual patch of the product, applied to a scratch copy of the repository, that must make a
 * short chaos run FAIL. Kept in this one file so that the anchors are easy to move when the product
 * is restructured: each `find` must occur exactly once in its file, or the run stops and says which
 * anchor is gone (a mutant that silently patches nothing would "survive" and prove nothing).
 *
 * The mutants hit a share of the messages, picked by a hash of the message id (`picked`), so the run
 * still has the honest majority around them, as a real defect would.
 */

export interface TextPatch {
  /** Path from the repository's root. */
  readonly file: string;
  /** Text that must occur exactly once in the file. */
  readonly find: string;
  readonly replace: string;
}

export interface Mutant {
  readonly name: string;
  /** What the bug does, for the table. */
  readonly bug: string;
  /** What the checker is expected to see. */
  readonly expect: string;
  readonly patches: readonly TextPatch[];
}

/** An expression true for about one message id in `every`: the same ids in every process. */
export function picked(idExpression: string, every = 16): string {
  return `([...String(${idExpression})].reduce((h, c) => (Math.imul(h, 31) + c.charCodeAt(0)) >>> 0, 7) % ${every} === 0)`;
}

const SEND_RESULT = `          const refused = refusalsOf(info.rejectedErrors, envelope);`;
const RECORD_OUTCOME = `    const { claimed, now } = input;
    const update = leaveSending(claimed, now, input.to, input.owner);
    // An outcome that is no attempt and leaves the message retrying (an outage, a throttle) is its`;
const AMBIGUOUS = `    return result(
      'ambiguous',`;
const RELAY_INSERT = `    return { kind: 'act', id: inserted.id, dispatch: inserted, deleteSchedules: [] };`;
const SWEEP_DECISION = `    const decision = decideSweep({
      record,
      now,`;
const FRESHNESS = `  return group !== null && group !== undefined && head !== undefined && head > group.version;`;
const LEASE_END = `  const leaseUntil = new Date(claimedAt.getTime() + settings.leaseSeconds * 1000);`;
const THROTTLE_ORIGIN = `    if (origin !== FAILURE_ORIGIN.throttle)
      return { ...classified, origin, hardBounce: isHardBounce(classified) };`;

export const MUTANTS: readonly Mutant[] = [
  {
    name: 'second-send-after-250',
    bug: 'a second SMTP send of the message on the same session after its 250',
    expect: 'unexplained duplicates',
    patches: [
      {
        file: 'lambdas/adapters/NodemailerMailer.ts',
        find: SEND_RESULT,
        replace: `${SEND_RESULT}
          if (${picked('email.id')}) {
            await untilAborted(sendOn(session, smtpEnvelope, this.compose(email, () => undefined)), abort.signal).catch(() => undefined);
          }`,
      },
    ],
  },
  {
    name: 'no-outcome-write-after-250',
    bug: 'the outcome write after a 250 is skipped (reported as landed)',
    expect: 'unexplained duplicates (the lease runs out, the message is sent again)',
    patches: [
      {
        file: 'lambdas/store/senderTransitions.ts',
        find: RECORD_OUTCOME,
        replace: `    if (input.to === 'sent' && ${picked('input.claimed.id')}) {
      return Promise.resolve({ outcome: 'applied', record: { ...input.claimed, status: 'sent' } } as never);
    }
${RECORD_OUTCOME}`,
      },
    ],
  },
  {
    name: 'ambiguous-as-failed',
    bug: 'a connection cut after the final dot is classified permanent, so the message ends failed',
    expect: 'wrong fates (the relay holds a copy of a failed message)',
    patches: [
      {
        file: 'lambdas/core/classifySmtpError.ts',
        find: AMBIGUOUS,
        replace: `    return result(
      'permanent',`,
      },
    ],
  },
  {
    name: 'relay-drops-sweeper-skips',
    bug: 'the stream relay drops some new messages and the sweeper skips the same ones',
    expect: 'lost messages (never dispatched)',
    patches: [
      {
        file: 'lambdas/relay/planRelay.ts',
        find: RELAY_INSERT,
        replace: `    if (${picked('inserted.id')}) return { kind: 'ignore', reason: 'mutant: dropped' };
${RELAY_INSERT}`,
      },
      {
        file: 'lambdas/sweeper/sweep.ts',
        find: SWEEP_DECISION,
        replace: `    if (${picked('entry.id')}) {
      tally.skipped++;
      continue;
    }
${SWEEP_DECISION}`,
      },
    ],
  },
  {
    name: 'freshness-skipped',
    bug: 'the freshness check never finds a message superseded',
    expect: 'wrong fates and unexpected copies (superseded messages sent)',
    patches: [{ file: 'lambdas/core/unsentDecision.ts', find: FRESHNESS, replace: '  return false;' }],
  },
  {
    name: 'lease-shorter-than-a-slow-send',
    bug: 'the lease, set once at the claim and never extended, lasts 4 s: a slow 250 outlives it',
    expect: 'unexplained duplicates (a slow copy heard 250, then sent again by a takeover)',
    patches: [
      {
        file: 'lambdas/core/sendDecision.ts',
        find: LEASE_END,
        replace:
          '  const leaseUntil = new Date(claimedAt.getTime() + Math.min(settings.leaseSeconds, 4) * 1000);',
      },
    ],
  },
  {
    name: 'throttle-as-permanent',
    bug: "SES's 454 throttle reply is classified a permanent refusal of the message",
    expect: 'wrong fates (failed with no 5xx from the relay)',
    patches: [
      {
        file: 'lambdas/core/classifySmtpError.ts',
        find: THROTTLE_ORIGIN,
        replace: `    if (origin === FAILURE_ORIGIN.throttle)
      return { ...classified, class: 'permanent', origin: FAILURE_ORIGIN.transaction, hardBounce: false };
${THROTTLE_ORIGIN}`,
      },
    ],
  },
];

/** Applies a patch to a file's text; throws, naming the anchor, unless it occurs exactly once. */
export function applyPatch(text: string, patch: TextPatch): string {
  const first = text.indexOf(patch.find);
  if (first < 0 || text.indexOf(patch.find, first + 1) >= 0) {
    const times = first < 0 ? 'no longer occurs' : 'occurs more than once';
    throw new Error(
      `mutant anchor in ${patch.file} ${times}; re-anchor it in chaos/mutantPatches.ts:\n${patch.find}`,
    );
  }
  return text.slice(0, first) + patch.replace + text.slice(first + patch.find.length);
}
