/**
 * `postdate sending pause [--kind K] [--reason …]`, `resume [--kind K]`, `status` (DESIGN §5, §6):
 * the operator's side of the sending gate (lambdas/core/relayBreaker.ts). A pause holds copies the
 * way an open relay breaker does — each goes back to the queue unclaimed, no attempt counted, never
 * dead-lettered — so sending can stop during an incident, or one kind of notification can roll out
 * at a time (pause all, then resume the kinds one by one), without losing anything. A resume lets
 * the held copies through as they come back (within about POSTDATE_RELAY_PROBE_SECONDS).
 */
import type { Command } from 'commander';
import { tagValueProblem } from '../lambdas/core/headerSafety.js';
import {
  type PauseCommand,
  type PauseState,
  pauseAfter,
  pauseChanges,
  type SendingGateState,
} from '../lambdas/core/relayBreaker.js';
import type { SendingGateStore } from '../lambdas/ports/SendingGate.js';
import { DynamoSendingGate } from '../lambdas/store/sendingGate.js';
import { CliError, EXIT, UsageError } from './cliErrors.js';
import type { CommandAction, CommandContext } from './commandAction.js';
import { type Output, paint, printFields } from './output.js';
import {
  type RelaysDeps,
  type RelaysStatus,
  readGates,
  relaysDepsOf,
  relaysStatusOf,
} from './relaysCommands.js';

export interface SendingDeps {
  /** The gate item: the operator's pauses (every relay shares them). */
  readonly gate: SendingGateStore;
  /** Every configured relay's breaker and drain (DESIGN §15): whether any takes mail. */
  readonly relays: RelaysDeps;
  readonly now: () => Date;
}

/**
 * Sending as the senders see it: the relays (whether any takes mail, `relays status`'s one rule) and
 * the operator's pauses. What `sending status|pause|resume` and `reconcile` show.
 */
export interface SendingStatus extends RelaysStatus {
  readonly pause: PauseState;
}

/**
 * Reads the pauses and every relay's breaker, in one read of the gate's key; refuses (a UsageError)
 * a shell's list of relays that leaves out one the table holds (relaysCommands.ts `readGates`).
 */
export async function readSending(deps: Pick<SendingDeps, 'relays'>): Promise<SendingStatus> {
  const read = await readGates(deps.relays);
  return { ...relaysStatusOf(deps.relays, read), pause: read.pause };
}

/** What sending looks like once `pause` is written, beside the relays as `before` found them. */
function withPause(before: SendingStatus, pause: PauseState): SendingStatus {
  return { ...before, pause, pausedAll: pause.all !== undefined };
}

/**
 * What a pause or resume finds: whether what it names was paused already. A pause of what was
 * (`was_paused` true) or a resume of what was not (false, a kind may be misspelt) changed nothing.
 */
export interface SendingPauseChange extends SendingStatus {
  readonly wasPaused: boolean;
}

/**
 * Applies one pause or resume (read, change, conditional write; again when an operator raced us). A
 * kind is any value the API takes in `tags.kind` (core/headerSafety.ts `tagValueProblem`) but the
 * empty one, which DynamoDB cannot key a pause by. A command that changes nothing (core/relayBreaker.ts
 * `pauseChanges`: a resume of what is not paused, a pause of what is) writes nothing: `changed` is false.
 */
export async function changePause(
  deps: SendingDeps,
  command: PauseCommand,
): Promise<{ readonly gate: SendingGateState; readonly changed: boolean }> {
  assertKind(command.kind);
  for (let round = 0; round < 5; round++) {
    const gate = await deps.gate.read();
    if (!pauseChanges(gate.pause, command)) return { gate, changed: false };
    const next = pauseAfter(gate.pause, command, deps.now());
    if ((await deps.gate.writePause(gate.pause, next)) === 'written') {
      return { gate: { ...gate, pause: next }, changed: true };
    }
  }
  throw new CliError('the pause changed under us five times in a row; run the command again');
}

/** `--kind`, checked before the stack is read: bad usage whether or not it answers. @throws UsageError */
function assertKind(kind: string | undefined): void {
  const problem = kind === undefined ? null : kind === '' ? 'value must not be empty' : tagValueProblem(kind);
  if (problem !== null) throw new UsageError(`--kind is a tags.kind value: its ${problem}`);
}

export async function sendingPause(
  deps: SendingDeps,
  options: { kind?: string; reason?: string },
  out: Output,
): Promise<SendingPauseChange> {
  assertKind(options.kind);
  // The relays first: a list refused must leave the pause as it was.
  const before = await readSending(deps);
  const { gate, changed } = await changePause(deps, {
    action: 'pause',
    kind: options.kind,
    reason: options.reason ?? 'paused by an operator',
  });
  if (!out.json) {
    out.line(
      paint(
        out,
        'yellow',
        !changed
          ? `${options.kind === undefined ? 'sending' : `kind ${options.kind}`} was already paused: nothing changed`
          : options.kind === undefined
            ? 'sending paused: every message waits (no attempt counted) until `postdate sending resume`'
            : `sending paused for kind ${options.kind}: its messages wait, other kinds flow`,
      ),
    );
  }
  const status = { ...withPause(before, gate.pause), wasPaused: !changed };
  render(status, out);
  return status;
}

/**
 * Lifts a pause. Resuming what is not paused (a kind never paused, or misspelt) changes nothing and
 * is not an error, so a script may resume twice; it says so, and `was_paused` is false in the JSON
 * (docs/cli.md).
 */
export async function sendingResume(
  deps: SendingDeps,
  options: { kind?: string },
  out: Output,
): Promise<SendingPauseChange> {
  assertKind(options.kind);
  const before = await readSending(deps);
  const { gate, changed } = await changePause(deps, { action: 'resume', kind: options.kind });
  const status = { ...withPause(before, gate.pause), wasPaused: changed };
  if (out.json) {
    out.data(status);
    return status;
  }
  out.line(
    !changed
      ? paint(
          out,
          'yellow',
          `${options.kind === undefined ? 'nothing was paused' : `kind ${options.kind} was not paused`}: nothing changed`,
        )
      : paint(
          out,
          'green',
          options.kind === undefined
            ? `sending resumed: the held messages go out as their copies come back${kindsLiftedToo(before.pause)}`
            : `sending resumed for kind ${options.kind}`,
        ),
  );
  render(status, out);
  return status;
}

/** A resume of everything lifts each kind's own pause too (core pauseAfter): said, so nobody is surprised. */
function kindsLiftedToo(pause: PauseState): string {
  const kinds = Object.keys(pause.kinds).sort();
  if (kinds.length === 0) return '';
  return ` (${kinds.length === 1 ? 'kind' : 'kinds'} ${kinds.join(', ')} too: ${kinds.length === 1 ? 'its own pause is' : 'their own pauses are'} lifted)`;
}

export async function sendingStatus(deps: SendingDeps, out: Output): Promise<SendingStatus> {
  const status = await readSending(deps);
  render(status, out);
  return status;
}

/** Sending in words: whether a relay takes mail (and each one that does not), and the pauses. */
export function render(status: SendingStatus, out: Output): void {
  if (out.json) {
    out.data(status);
    return;
  }
  const { pause } = status;
  const first = status.relays[0]?.name;
  const relay = !status.available
    ? paint(out, 'red', 'UNAVAILABLE: no relay takes mail; copies wait, no attempt counted')
    : status.relays.length === 1
      ? paint(out, 'green', 'available (breaker closed)')
      : paint(
          out,
          status.leavingThrough === first ? 'green' : 'yellow',
          `available (through ${status.leavingThrough ?? '?'}${status.leavingThrough === first ? '' : ', failed over'})`,
        );
  const down = status.relays
    .filter((entry) => entry.breaker !== 'closed' || entry.disabled !== null || entry.quotaHeldUntil !== null)
    .map((entry): [string, string] => [
      `  relay ${entry.name}`,
      paint(
        out,
        'red',
        entry.disabled !== null
          ? // Drained, it is never probed: its breaker says only how it was left (runbook §5a).
            `disabled since ${entry.disabled.at} (${entry.disabled.reason})${
              entry.breaker === 'closed'
                ? ''
                : `; breaker ${entry.breaker} since ${entry.openedAt ?? '?'}, probed once enabled; ${entry.reason ?? ''}`
            }`
          : entry.breaker !== 'closed'
            ? `breaker ${entry.breaker} since ${entry.openedAt ?? '?'}; next probe ${entry.nextProbe ?? '?'}; ${entry.failedProbes} failed probe(s); ${entry.reason ?? ''}`
            : `daily quota spent until ${entry.quotaHeldUntil ?? '?'}`,
      ),
    ]);
  const paused =
    pause.all === undefined
      ? Object.keys(pause.kinds).length === 0
        ? paint(out, 'green', 'nothing')
        : paint(out, 'yellow', `kinds ${Object.keys(pause.kinds).sort().join(', ')}`)
      : paint(
          out,
          'yellow',
          `everything since ${pause.all.at} (${pause.all.reason})${
            pause.all.except.length > 0 ? `, except kinds ${pause.all.except.join(', ')}` : ''
          }`,
        );
  printFields(out, [
    ['relay', relay],
    ...down,
    ['paused', paused],
    ...Object.entries(pause.kinds)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([kind, entry]): [string, string] => [`  kind ${kind}`, `since ${entry.at} (${entry.reason})`]),
  ]);
}

/** Registers `postdate sending …` (one line in cli/postdate.ts). */
export function registerSendingCommands(program: Command, action: CommandAction): void {
  const deps = (context: CommandContext): SendingDeps => ({
    gate: new DynamoSendingGate(context.target.documents, context.target.refs.tableName),
    relays: relaysDepsOf(context),
    now: context.now,
  });
  const sending = program
    .command('sending')
    .description('pause and resume sending (all, or one tags.kind); the relay breaker and the pauses');
  sending
    .command('pause')
    .description('hold messages (no attempt counted, nothing dead-lettered) until resumed')
    .option('--kind <kind>', 'only messages whose tags.kind is this (others keep flowing)')
    .option('--reason <text>', 'why, shown by `sending status`')
    .action(
      action(async (context, options: { kind?: string; reason?: string }) => {
        await sendingPause(deps(context), options, context.out);
        return EXIT.ok;
      }),
    );
  sending
    .command('resume')
    .description('let held messages go: everything, or one kind (also out of a pause of everything)')
    .option('--kind <kind>', 'only this tags.kind')
    .action(
      action(async (context, options: { kind?: string }) => {
        await sendingResume(deps(context), options, context.out);
        return EXIT.ok;
      }),
    );
  sending
    .command('status')
    .description(
      'whether a relay takes mail (each breaker not closed, each relay disabled) and what is paused',
    )
    .action(
      action(async (context) => {
        await sendingStatus(deps(context), context.out);
        return EXIT.ok;
      }),
    );
}
