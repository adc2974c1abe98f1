/**
 * `postdate relays status`, `disable NAME [--reason …]`, `enable NAME` (DESIGN §15): the operator's
 * side of failover. Each relay has its own breaker (lambdas/core/relayBreaker.ts); a copy leaves
 * through the first relay whose breaker is closed and that is not disabled (lambdas/core/relays.ts
 * `failoverDecision`). Disabling a relay drains it: the copies go to the next relay in order, none is
 * sent to it nor probes it, nothing is counted as an attempt. Enabling it lets the copies back as
 * the senders read the gate again (about a second).
 *
 * The relays and their order come from the environment the functions have: POSTDATE_RELAY_NAMES
 * (the stack output `RelayNames` under `--stack`), else the names in POSTDATE_RELAYS, else the one
 * relay `default` (SMTP_*).
 */
import type { Command } from 'commander';
import { type BreakerState, type PauseEntry, relayBreakerSettings } from '../lambdas/core/relayBreaker.js';
import { DEFAULT_RELAY, RELAYS_VARIABLE, relayInUse } from '../lambdas/core/relays.js';
import type { SendingGateStore } from '../lambdas/ports/SendingGate.js';
import { DynamoSendingGate } from '../lambdas/store/sendingGate.js';
import { CliError, EXIT, UsageError } from './cliErrors.js';
import type { CommandAction, CommandContext } from './commandAction.js';
import { type Output, paint, printFields, printTable } from './output.js';

/** The variable (and stack output `RelayNames`) that lists the relays' names in order, comma-separated. */
export const RELAY_NAMES_VARIABLE = 'POSTDATE_RELAY_NAMES';

export interface RelaysDeps {
  /** The relays' names in order. */
  readonly names: readonly string[];
  /** The gate of one relay: its breaker and drain, and the pauses every relay shares. */
  readonly gate: (name: string) => SendingGateStore;
  readonly now: () => Date;
}

/** One relay as `relays status` shows it. */
export interface RelayStatus {
  readonly name: string;
  /** Its place in the order, from 1. */
  readonly position: number;
  readonly breaker: BreakerState['state'];
  /** Open or half-open: since when, why, and when the next probe may start. */
  readonly openedAt: string | undefined;
  readonly reason: string | undefined;
  readonly nextProbe: string | undefined;
  readonly failedProbes: number;
  /** The operator's drain, when set. */
  readonly disabled: PauseEntry | undefined;
}

export interface RelaysStatus {
  readonly relays: readonly RelayStatus[];
  /**
   * Whether sending is available (pauses aside): some relay takes mail, as the senders decide it
   * (core/relays.ts `relayInUse`). The one answer `relays status`, `sending status` and `reconcile` give.
   */
  readonly available: boolean;
  /** The relay mail leaves through now (pauses aside); undefined when none takes it. */
  readonly leavingThrough: string | undefined;
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
  const status = await readRelays(deps);
  render(status, out);
  return status;
}

/** {@link relaysStatus} without printing: what `sending status` and `reconcile` show of the relays. */
export async function readRelays(deps: RelaysDeps): Promise<RelaysStatus> {
  const gates = await Promise.all(deps.names.map((name) => deps.gate(name).read()));
  // The senders' own decision, pauses aside (`sending status` shows those); the timing is irrelevant.
  const settings = relayBreakerSettings({ relayProbeSeconds: 1, smtpTimeoutSeconds: 1 });
  const inUse = relayInUse(gates, deps.now(), settings);
  const relays = gates.map(
    ({ breaker, disabled }, index): RelayStatus => ({
      name: deps.names[index] ?? '',
      position: index + 1,
      breaker: breaker.state,
      openedAt: breaker.state === 'closed' ? undefined : breaker.opened_at,
      reason: breaker.state === 'closed' ? undefined : breaker.reason,
      nextProbe: breaker.state === 'closed' ? undefined : breaker.probe_at,
      failedProbes: breaker.state === 'closed' ? 0 : (breaker.failed_probes ?? 0),
      disabled,
    }),
  );
  return {
    relays,
    available: inUse !== undefined,
    leavingThrough: inUse === undefined ? undefined : relays[inUse]?.name,
    pausedAll: gates[0]?.pause.all !== undefined,
  };
}

/** Drains `name`: its copies go to the next relay. Refused when it would leave no relay enabled. */
export async function relaysDisable(
  deps: RelaysDeps,
  name: string,
  options: { reason?: string },
  out: Output,
): Promise<RelaysStatus> {
  const gates = await Promise.all(
    deps.names.map(async (relay) => ({ relay, gate: await deps.gate(relay).read() })),
  );
  knownRelay(deps, name);
  const othersEnabled = gates.filter(({ relay, gate }) => relay !== name && gate.disabled === undefined);
  if (othersEnabled.length === 0) {
    throw new CliError(
      `disabling relay "${name}" would leave no relay enabled, and mail would wait for one: ` +
        'enable another relay first, or hold all mail with `postdate sending pause`',
    );
  }
  await deps.gate(name).setDisabled({
    reason: options.reason ?? 'disabled by an operator',
    at: deps.now().toISOString(),
  });
  if (!out.json) {
    out.line(
      paint(
        out,
        'yellow',
        `relay ${name} disabled: its mail leaves through the next relay until \`postdate relays enable ${name}\``,
      ),
    );
  }
  return relaysStatus(deps, out);
}

/** Lets `name` take mail again (when its breaker is closed). */
export async function relaysEnable(deps: RelaysDeps, name: string, out: Output): Promise<RelaysStatus> {
  knownRelay(deps, name);
  await deps.gate(name).setDisabled(undefined);
  if (!out.json) out.line(paint(out, 'green', `relay ${name} enabled: it takes mail again in its turn`));
  return relaysStatus(deps, out);
}

function knownRelay(deps: RelaysDeps, name: string): void {
  if (!deps.names.includes(name)) {
    throw new UsageError(
      `no relay "${name}": the relays are ${deps.names.join(', ')} ` +
        `(from ${RELAY_NAMES_VARIABLE}, ${RELAYS_VARIABLE} or --stack; without them, only "${DEFAULT_RELAY}")`,
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
          relay.disabled === undefined ? 'no' : `since ${relay.disabled.at} (${relay.disabled.reason})`,
        tone: (relay) => (relay.disabled === undefined ? undefined : 'yellow'),
      },
    ],
    status.relays,
  );
  printFields(out, [
    [
      'mail leaves through',
      status.leavingThrough === undefined
        ? paint(out, 'red', 'no relay: every one is unavailable or disabled; copies wait, no attempt counted')
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
  return {
    names: relayNamesOf({ ...target.env, [RELAY_NAMES_VARIABLE]: target.refs.relayNames }),
    gate: (name) => new DynamoSendingGate(target.documents, target.refs.tableName, name),
    now,
  };
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
    .action(
      action(async (context, name: string, options: { reason?: string }) => {
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
