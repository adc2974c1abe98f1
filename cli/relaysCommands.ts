/**
 * `postdate relays status`, `disable NAME [--reason …]`, `enable NAME` (DESIGN §15): the operator's
 * side of failover. Each relay has its own breaker (lambdas/core/relayBreaker.ts); a copy leaves
 * through the first relay whose breaker is closed and that is not disabled (lambdas/core/relays.ts
 * `failoverDecision`). Disabling a relay drains it: the copies go to the next relay in order, none is
 * sent to it nor probes it, nothing is counted as an attempt. Enabling it lets the copies back as
 * the senders read the gate again (about a second).
 *
 * The relays and their order: the stack's own list when the CLI has it (the output `RelayNames`
 * under `--stack`, the local stack's file), else this shell's POSTDATE_RELAY_NAMES, else the names in
 * POSTDATE_RELAYS, else the one relay `default` (SMTP_*). A shell's list can be wrong (unset, stale,
 * misspelt), and a wrong list would answer "available" through a relay no sender has: so when the
 * table holds a relay's item the shell's list leaves out, the commands refuse (`readGates`).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Command } from 'commander';
import {
  type BreakerState,
  nextProbeAt,
  type PauseEntry,
  quotaHeldUntil,
  relayBreakerSettings,
} from '../lambdas/core/relayBreaker.js';
import { DEFAULT_RELAY, RELAYS_VARIABLE, relayInUse } from '../lambdas/core/relays.js';
import type { SendingGateStore } from '../lambdas/ports/SendingGate.js';
import { DynamoSendingGate, type RelayGatesRead, readRelayGates } from '../lambdas/store/sendingGate.js';
import { CliError, EXIT, NotFoundError, UsageError } from './cliErrors.js';
import type { CommandAction, CommandContext } from './commandAction.js';
import { type Output, paint, printFields, printTable } from './output.js';

/** The variable (and stack output `RelayNames`) that lists the relays' names in order, comma-separated. */
export const RELAY_NAMES_VARIABLE = 'POSTDATE_RELAY_NAMES';

export interface RelaysDeps {
  /** The relays' names in order. */
  readonly names: readonly string[];
  /**
   * Where the names come from: the stack's own list (its output `RelayNames`, the local stack's
   * file), or this shell (POSTDATE_RELAY_NAMES, POSTDATE_RELAYS, or neither: `default`).
   */
  readonly namesFrom: 'stack' | 'shell';
  /** Every relay's gate in one read, and the relays the table holds an item for. */
  readonly readGates: (names: readonly string[]) => Promise<RelayGatesRead>;
  /** The gate of one relay, to set or lift its drain. */
  readonly gate: (name: string) => SendingGateStore;
  readonly now: () => Date;
}

/** The relays of one outbox table, read and written as the senders read them (store/sendingGate.ts). */
export function relaysDeps(options: {
  readonly documents: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly names: readonly string[];
  readonly namesFrom: RelaysDeps['namesFrom'];
  readonly now: () => Date;
}): RelaysDeps {
  const { documents, tableName } = options;
  return {
    names: options.names,
    namesFrom: options.namesFrom,
    readGates: (names) => readRelayGates(documents, tableName, names),
    gate: (name) => new DynamoSendingGate(documents, tableName, name),
    now: options.now,
  };
}

/** One relay as `relays status` shows it; a field without a value is null, so --json always names it. */
export interface RelayStatus {
  readonly name: string;
  /** Its place in the order, from 1. */
  readonly position: number;
  readonly breaker: BreakerState['state'];
  /**
   * Open or half-open: since when and why; and when the next probe may start, none while the relay
   * is disabled (a drained relay is never probed: core/relayBreaker.ts `nextProbeAt`).
   */
  readonly openedAt: string | null;
  readonly reason: string | null;
  readonly nextProbe: string | null;
  readonly failedProbes: number;
  /** The operator's drain, when set. */
  readonly disabled: PauseEntry | null;
  /**
   * Its daily quota is spent (a quota reply, decision 0198): until then its mail leaves through the
   * next relay, though its breaker is closed (core/relayBreaker.ts `quotaHeldUntil`).
   */
  readonly quotaHeldUntil: string | null;
}

export interface RelaysStatus {
  readonly relays: readonly RelayStatus[];
  /**
   * Whether sending is available (pauses aside): some relay takes mail, as the senders decide it
   * (core/relays.ts `relayInUse`). The one answer `relays status`, `sending status` and `reconcile` give.
   */
  readonly available: boolean;
  /** The relay mail leaves through now (pauses aside); null when none takes it. */
  readonly leavingThrough: string | null;
  /** Sending is paused for everything (`postdate sending pause`): no relay takes mail until a resume. */
  readonly pausedAll: boolean;
}

/**
 * The relays' names in order, from the environment: POSTDATE_RELAY_NAMES, else POSTDATE_RELAYS (its
 * names; the rest of each entry is the functions' to check), else the one relay `default`.
 */
export function relayNamesOf(env: Readonly<Record<string, string | undefined>>): readonly string[] {
  const listed = env[RELAY_NAMES_VARIABLE]?.trim();
  if (listed !== undefined && listed !== '') {
    return listed
      .split(',')
      .map((name) => name.trim())
      .filter((name) => name !== '');
  }
  const relays = env[RELAYS_VARIABLE];
  if (relays === undefined || relays.trim() === '') return [DEFAULT_RELAY];
  let parsed: unknown;
  try {
    parsed = JSON.parse(relays);
  } catch {
    throw new UsageError(`${RELAYS_VARIABLE} is not JSON: fix it, or set ${RELAY_NAMES_VARIABLE}=name,name`);
  }
  const names = Array.isArray(parsed)
    ? parsed.flatMap((entry: unknown) =>
        typeof entry === 'object' && entry !== null && typeof (entry as { name?: unknown }).name === 'string'
          ? [(entry as { name: string }).name]
          : [],
      )
    : [];
  if (names.length === 0) {
    throw new UsageError(
      `${RELAYS_VARIABLE} names no relay: fix it, or set ${RELAY_NAMES_VARIABLE}=name,name`,
    );
  }
  return names;
}

/** Each relay's breaker and drain, and the relay mail leaves through now (core/relays.ts decides). */
export async function relaysStatus(deps: RelaysDeps, out: Output): Promise<RelaysStatus> {
  const status = relaysStatusOf(deps, await readGates(deps));
  render(status, out);
  return status;
}

/**
 * What {@link relayInUse} is asked with: the senders' own decision, pauses aside (`sending status`
 * shows those). Its timing only decides when a probe is due, and a due probe is not a send.
 */
const IN_USE_SETTINGS = relayBreakerSettings({ relayProbeSeconds: 1, smtpTimeoutSeconds: 1 });

/**
 * The relays as the senders decide with them, from one read of their gates: what `relays status`,
 * `sending status` and `reconcile` show of the relays.
 */
export function relaysStatusOf(
  deps: Pick<RelaysDeps, 'names' | 'now'>,
  { gates, pause }: Pick<RelayGatesRead, 'gates' | 'pause'>,
): RelaysStatus {
  const now = deps.now();
  const inUse = relayInUse(gates, now, IN_USE_SETTINGS);
  const relays = gates.map(
    ({ breaker, disabled }, index): RelayStatus => ({
      name: deps.names[index] ?? '',
      position: index + 1,
      breaker: breaker.state,
      openedAt: breaker.state === 'closed' ? null : (breaker.opened_at ?? null),
      reason: breaker.state === 'closed' ? null : (breaker.reason ?? null),
      nextProbe: nextProbeAt({ breaker, disabled }) ?? null,
      failedProbes: breaker.state === 'closed' ? 0 : (breaker.failed_probes ?? 0),
      disabled: disabled ?? null,
      quotaHeldUntil: quotaHeldUntil(breaker, now) ?? null,
    }),
  );
  return {
    relays,
    available: inUse !== undefined,
    leavingThrough: inUse === undefined ? null : (relays[inUse]?.name ?? null),
    pausedAll: pause.all !== undefined,
  };
}

/**
 * The relays' gates in the order of `deps.names` and the pauses, from one read, after checking that
 * the list leaves out no relay the table knows. A shell's list that does leave one out is refused:
 * it would decide "available" without the relays the senders use. The stack's own list is the
 * senders' own: an item of another relay was left by an earlier configuration (decision 0142), and
 * is passed by as the senders pass it. Every command that writes the gate calls this first, so a
 * refusal writes nothing.
 */
export async function readGates(deps: RelaysDeps): Promise<RelayGatesRead> {
  const read = await deps.readGates(deps.names);
  const unlisted = read.stored.filter((name) => !deps.names.includes(name));
  if (unlisted.length > 0 && deps.namesFrom === 'shell') {
    throw new UsageError(
      `the table holds relay${unlisted.length === 1 ? '' : 's'} ${unlisted.join(', ')}, which this shell's ` +
        `list of relays (${deps.names.join(', ')}) leaves out, so it cannot say where mail leaves: ` +
        `pass --stack NAME, or set ${RELAY_NAMES_VARIABLE} to the stack's relays in order (its output RelayNames)`,
    );
  }
  return read;
}

/** What `relays disable|enable` answer: the relays after the command, and whether the relay was disabled before it. */
export interface RelaysChange extends RelaysStatus {
  /** The relay was disabled before the command (a repeated disable, an enable that lifted a drain). */
  readonly wasDisabled: boolean;
}

/**
 * Drains `name`: its copies go to the next relay that takes mail. Refused, unless `force`, when no
 * relay would take mail after it (the senders' rule, `relayInUse`, on the gates with `name`
 * disabled): every other one unavailable or disabled, mail would wait. A relay already disabled
 * keeps its drain, as a repeated `sending pause` changes nothing: the time it began, and its reason
 * unless a new one is given; nothing is refused, since nothing changes where mail leaves.
 */
export async function relaysDisable(
  deps: RelaysDeps,
  name: string,
  options: { reason?: string; force?: boolean },
  out: Output,
): Promise<RelaysChange> {
  const read = await readGates(deps);
  knownRelay(deps, name);
  const before = read.gates[deps.names.indexOf(name)]?.disabled;
  const entry =
    before === undefined
      ? { reason: options.reason ?? 'disabled by an operator', at: deps.now().toISOString() }
      : { reason: options.reason ?? before.reason, at: before.at };
  const drained = read.gates.map((gate, index) =>
    deps.names[index] === name ? { ...gate, disabled: entry } : gate,
  );
  const next = relayInUse(drained, deps.now(), IN_USE_SETTINGS);
  if (before === undefined && next === undefined && options.force !== true) {
    throw new CliError(
      deps.names.length === 1
        ? `relay "${name}" is the only relay: disabling it would hold all mail with no relay alarm to say ` +
            'why; to hold all mail, `postdate sending pause` (runbook §5), or pass --force to drain it anyway'
        : `disabling relay "${name}" would leave no relay that takes mail (every other one is unavailable, ` +
            'disabled or quota-held), and mail would wait for one: enable or repair another relay first, hold all mail ' +
            'with `postdate sending pause`, or pass --force to drain it anyway',
    );
  }
  if (before === undefined || entry.reason !== before.reason) await deps.gate(name).setDisabled(entry);
  if (!out.json) {
    const where =
      next === undefined
        ? 'no relay takes mail; copies wait (no attempt counted) until one does'
        : `its mail leaves through ${deps.names[next]} until \`postdate relays enable ${name}\``;
    out.line(
      paint(
        out,
        next === undefined ? 'red' : 'yellow',
        before === undefined
          ? `relay ${name} disabled: ${where}`
          : `relay ${name} was already disabled since ${entry.at} (${entry.reason}): ${where}`,
      ),
    );
  }
  return changed(deps, out, before !== undefined);
}

/**
 * Lets `name` take mail again, in its turn: at once when its breaker is closed, else once its probe
 * answers. A relay that is not disabled is left as it is, as `sending resume` of what is not paused.
 */
export async function relaysEnable(deps: RelaysDeps, name: string, out: Output): Promise<RelaysChange> {
  const read = await readGates(deps);
  knownRelay(deps, name);
  const gate = read.gates[deps.names.indexOf(name)];
  const wasDisabled = gate?.disabled !== undefined;
  if (wasDisabled) await deps.gate(name).setDisabled(undefined);
  if (!out.json) {
    out.line(
      !wasDisabled
        ? paint(out, 'yellow', `relay ${name} was not disabled: nothing changed`)
        : gate?.breaker.state === 'closed'
          ? paint(out, 'green', `relay ${name} enabled: it takes mail again in its turn`)
          : paint(
              out,
              'yellow',
              `relay ${name} enabled: its breaker is ${gate?.breaker.state ?? 'open'}; it takes mail again once its probe answers`,
            ),
    );
  }
  return changed(deps, out, wasDisabled);
}

/** The relays after a change, read again and shown, with whether the relay was disabled before it. */
async function changed(deps: RelaysDeps, out: Output, wasDisabled: boolean): Promise<RelaysChange> {
  const status = { ...relaysStatusOf(deps, await readGates(deps)), wasDisabled };
  render(status, out);
  return status;
}

function knownRelay(deps: RelaysDeps, name: string): void {
  if (!deps.names.includes(name)) {
    throw new NotFoundError(
      `no relay "${name}": the relays are ${deps.names.join(', ')} ` +
        `(from --stack, the local stack, ${RELAY_NAMES_VARIABLE} or ${RELAYS_VARIABLE}; without them, only "${DEFAULT_RELAY}")`,
      'postdate relays status',
    );
  }
}

/** The relays in words: a table in order, then where mail leaves now. */
function render(status: RelaysStatus, out: Output): void {
  if (out.json) {
    out.data(status);
    return;
  }
  printTable(
    out,
    [
      { header: '#', value: (relay) => String(relay.position), align: 'right' },
      { header: 'RELAY', value: (relay) => relay.name },
      {
        header: 'BREAKER',
        value: (relay) => relay.breaker,
        tone: (relay) => (relay.breaker === 'closed' ? 'green' : 'red'),
      },
      { header: 'SINCE', value: (relay) => relay.openedAt ?? '' },
      { header: 'NEXT PROBE', value: (relay) => relay.nextProbe ?? '' },
      {
        header: 'DISABLED',
        value: (relay) =>
          relay.disabled === null ? 'no' : `since ${relay.disabled.at} (${relay.disabled.reason})`,
        tone: (relay) => (relay.disabled === null ? undefined : 'yellow'),
      },
      {
        header: 'QUOTA',
        value: (relay) =>
          relay.quotaHeldUntil === null ? '' : `daily quota spent until ${relay.quotaHeldUntil}`,
        tone: (relay) => (relay.quotaHeldUntil === null ? undefined : 'yellow'),
      },
    ],
    status.relays,
  );
  printFields(out, [
    [
      'mail leaves through',
      status.leavingThrough === null
        ? paint(
            out,
            'red',
            'no relay: each is unavailable, disabled or its daily quota spent; copies wait, no attempt counted',
          )
        : paint(
            out,
            status.leavingThrough === status.relays[0]?.name ? 'green' : 'yellow',
            status.leavingThrough,
          ),
    ],
    ...(status.pausedAll
      ? [['paused', paint(out, 'yellow', 'everything (`postdate sending status`)')] as const]
      : []),
  ]);
}

/** The relays of the target stack (`relays`, `sending` and `reconcile` read the same ones). */
export function relaysDepsOf({ target, now }: Pick<CommandContext, 'target' | 'now'>): RelaysDeps {
  const ofStack = target.stackRelayNames;
  return relaysDeps({
    documents: target.documents,
    tableName: target.refs.tableName,
    names: relayNamesOf(ofStack === undefined ? target.env : { [RELAY_NAMES_VARIABLE]: ofStack }),
    namesFrom: ofStack === undefined ? 'shell' : 'stack',
    now,
  });
}

/** Registers `postdate relays …` (one line in cli/postdate.ts). */
export function registerRelaysCommands(program: Command, action: CommandAction): void {
  const deps = relaysDepsOf;
  const relays = program
    .command('relays')
    .description('the relays mail fails over between: breakers, drain (disable) and enable');
  relays
    .command('status')
    .description('each relay in order: breaker, next probe, disabled; and which one mail leaves through')
    .action(
      action(async (context) => {
        await relaysStatus(deps(context), context.out);
        return EXIT.ok;
      }),
    );
  relays
    .command('disable')
    .argument('<name>', 'the relay, as `relays status` names it')
    .description('drain a relay: its mail leaves through the next one (no attempt counted, nothing lost)')
    .option('--reason <text>', 'why, shown by `relays status`')
    .option('--force', 'drain it even when no relay would take mail after it (mail waits)')
    .action(
      action(async (context, name: string, options: { reason?: string; force?: boolean }) => {
        await relaysDisable(deps(context), name, options, context.out);
        return EXIT.ok;
      }),
    );
  relays
    .command('enable')
    .argument('<name>', 'the relay, as `relays status` names it')
    .description('let a disabled relay take mail again in its turn')
    .action(
      action(async (context, name: string) => {
        await relaysEnable(deps(context), name, context.out);
        return EXIT.ok;
      }),
    );
}
