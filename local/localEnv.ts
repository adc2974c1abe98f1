import { accessSync, constants, existsSync, mkdirSync, statSync } from 'node:fs';
import type { Server } from 'node:net';
import { dirname, resolve } from 'node:path';
import { type Config, ConfigError, settingValuesOf } from '../lambdas/core/config.js';
import {
  CONFIG_SETTINGS,
  LOCAL_PORT_SETTINGS,
  type SettingName,
  settingsEnvironment,
} from '../lambdas/core/configSpec.js';
import { TEST_KEY_PREFIX } from '../lambdas/core/testSide.js';
import { API_KEY_PATTERN } from '../lambdas/keys/apiKeys.js';
import { freePort, listenOnce } from './freePort.js';

/** The bucket of the local stack's attachments (in AWS the construct names it). */
export const LOCAL_ATTACHMENT_BUCKET = 'postdate-attachments';

/** The parts of the local stack that listen on a port. */
export type LocalPart = 'api' | 'dynamodb' | 'sqs' | 'scheduler' | 'smtp' | 'mailViewer' | 's3';

export type LocalPorts = Readonly<Record<LocalPart, number>>;

/** Fixed, documented default ports (docs/local-stack.md), each overridable; 0 picks any free port. */
export const LOCAL_PORT_DEFAULTS: LocalPorts = {
  api: CONFIG_SETTINGS.port.local,
  dynamodb: LOCAL_PORT_SETTINGS.dynamodb.default,
  sqs: LOCAL_PORT_SETTINGS.sqs.default,
  scheduler: LOCAL_PORT_SETTINGS.scheduler.default,
  smtp: LOCAL_PORT_SETTINGS.smtp.default,
  mailViewer: LOCAL_PORT_SETTINGS.mailViewer.default,
  s3: LOCAL_PORT_SETTINGS.s3.default,
};

/**
 * Every part on a free port of the system's choosing: what tests, benchmarks and the chaos harness
 * start their stacks with, so that two stacks on one machine never claim the same port. Typed as every
 * part, so a new part cannot be left on its fixed default.
 */
export const ANY_FREE_PORTS: LocalPorts = {
  api: 0,
  dynamodb: 0,
  sqs: 0,
  scheduler: 0,
  smtp: 0,
  mailViewer: 0,
  s3: 0,
};

/** The variable that sets each port (lambdas/core/configSpec.ts). `POSTDATE_PORT` is read by loadConfig. */
export const LOCAL_PORT_VARIABLES: Readonly<Record<LocalPart, string>> = {
  api: CONFIG_SETTINGS.port.variable,
  dynamodb: LOCAL_PORT_SETTINGS.dynamodb.variable,
  sqs: LOCAL_PORT_SETTINGS.sqs.variable,
  scheduler: LOCAL_PORT_SETTINGS.scheduler.variable,
  smtp: LOCAL_PORT_SETTINGS.smtp.variable,
  mailViewer: LOCAL_PORT_SETTINGS.mailViewer.variable,
  s3: LOCAL_PORT_SETTINGS.s3.variable,
};

const PART_NAMES: Readonly<Record<LocalPart, string>> = {
  api: 'the API',
  dynamodb: 'DynamoDB Local',
  sqs: 'the SQS emulator',
  scheduler: 'the Scheduler emulator',
  smtp: 'the SMTP sink',
  mailViewer: 'the mail viewer',
  s3: 'the S3 emulator',
};

type Env = Readonly<Record<string, string | undefined>>;

/** Reads the ports of the local parts other than the API (whose port is `config.port`). */
export function loadLocalPorts(env: Env, config: Config): LocalPorts {
  const read = (part: LocalPart): number => {
    const name = LOCAL_PORT_VARIABLES[part];
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') return LOCAL_PORT_DEFAULTS[part];
    if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
    const port = Number(raw);
    if (port > 65535) throw new ConfigError(name, `must be between 0 and 65535, got ${port}`);
    return port;
  };
  return {
    api: config.port,
    dynamodb: read('dynamodb'),
    sqs: read('sqs'),
    scheduler: read('scheduler'),
    smtp: read('smtp'),
    mailViewer: read('mailViewer'),
    s3: read('s3'),
  };
}

/**
 * `POSTDATE_DATA_DIR` (DESIGN §8): made when missing, and refused, naming the variable, when it is
 * not a directory this user can write. Made one level at a time: Node's recursive mkdir spins for
 * ever on a path it cannot make under /proc.
 */
export function checkLocalDataDir(config: Pick<Config, 'dataDir'>): void {
  if (config.dataDir === undefined) return;
  const dir = resolve(config.dataDir);
  const missing: string[] = [];
  for (let at = dir; !existsSync(at) && dirname(at) !== at; at = dirname(at)) missing.unshift(at);
  try {
    for (const level of missing) mkdirSync(level);
    if (!statSync(dir).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    accessSync(dir, constants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new ConfigError(
      CONFIG_SETTINGS.dataDir.variable,
      `must be a directory this user can write (or one it can make), got "${config.dataDir}" (${code})`,
    );
  }
}

/**
 * `POSTDATE_API_KEY`, when set, must be a key tenant `local` can hold: a live key in the form of
 * lambdas/keys/apiKeys.ts (a `pd_test_` key acts for a test side only, DESIGN §14). Checked with the
 * other variables, before anything starts (DESIGN §8); the value is a secret and is never echoed.
 */
export function checkLocalApiKey(config: Config): void {
  const key = config.apiKey;
  const variable = CONFIG_SETTINGS.apiKey.variable;
  if (key === undefined) return;
  if (!API_KEY_PATTERN.test(key)) {
    throw new ConfigError(
      variable,
      'must be "pd_" followed by 8–200 of A-Z, a-z, 0-9, _ and - (or unset it to have a key generated)',
    );
  }
  if (key.startsWith(TEST_KEY_PREFIX)) {
    throw new ConfigError(
      variable,
      `starts with "${TEST_KEY_PREFIX}", which makes a test key; the local tenant's key must be a live one (or unset it to have a key generated)`,
    );
  }
}

/**
 * The backup relay (`npm start -- --backup-relay`, docs/local-stack.md) lists both relays in the
 * functions' `POSTDATE_RELAYS` itself: with the variable set as well, the start is refused before
 * anything starts, naming it.
 */
export function checkLocalBackupRelay(
  config: Pick<Config, 'relaysJson'>,
  backupRelay: object | undefined,
): void {
  if (backupRelay === undefined || config.relaysJson === undefined) return;
  throw new ConfigError(
    CONFIG_SETTINGS.relaysJson.variable,
    'is set: the local backup relay (npm start -- --backup-relay) lists its own two relays; unset one of them',
  );
}

/** The settings that describe the one relay `default` when POSTDATE_RELAYS is unset (DESIGN §15). */
const SMTP_RELAY_SETTINGS = [
  'smtpHost',
  'smtpPort',
  'smtpUser',
  'smtpPass',
  'smtpSecure',
  'smtpRequireTls',
] as const satisfies readonly SettingName[];

/**
 * The warning for `SMTP_*` set beside POSTDATE_RELAYS, which makes them of no effect (DESIGN §15):
 * one line naming each one set (never a value: `SMTP_PASS` is a secret), or undefined. A warning,
 * not a refusal as `--backup-relay` beside it is: `SMTP_*` in a shell may serve another tool, and
 * the start does what POSTDATE_RELAYS says. (The construct refuses its `smtp*` props beside
 * `relays`: those are Postdate's own.)
 */
export function smtpBesideRelaysWarning(env: Env, config: Pick<Config, 'relaysJson'>): string | undefined {
  if (config.relaysJson === undefined) return undefined;
  const ignored = SMTP_RELAY_SETTINGS.map((name) => CONFIG_SETTINGS[name].variable).filter(
    (variable) => (env[variable]?.trim() ?? '') !== '',
  );
  if (ignored.length === 0) return undefined;
  const relays = CONFIG_SETTINGS.relaysJson.variable;
  return `warning: ${listed(ignored)} ${ignored.length === 1 ? 'is' : 'are'} ignored: ${relays} is set, and mail leaves only through the relays it lists (make that relay one of its entries, or unset ${ignored.length === 1 ? 'it' : 'them'})`;
}

/** Host names of a relay that reach the local stack's sink (it listens on 127.0.0.1). */
const SINK_HOSTS: ReadonlySet<string> = new Set(['127.0.0.1', 'localhost']);

/**
 * Whether the local stack runs its own SMTP sink and viewer (MailDev under `npm start`, else the
 * built-in sink) on `smtpPort`, the port asked of it (DESIGN §7, decision 0228): when mail may go
 * there. Without POSTDATE_RELAYS, `SMTP_HOST` names the one relay and the sink is wanted when it is
 * unset; with it, mail leaves only through the relays it lists (DESIGN §15: `SMTP_*` is then of no
 * effect), and the sink is wanted only when one of them is the sink itself. A port of 0 (any free
 * port) is one no relay can have named.
 */
export function startsLocalSink(
  config: Pick<Config, 'smtp' | 'relaysJson' | 'relays'>,
  smtpPort: number,
): boolean {
  if (config.relaysJson === undefined) return config.smtp.host === undefined;
  return config.relays.some(
    (relay) => relay.port === smtpPort && SINK_HOSTS.has(relay.host?.toLowerCase() ?? ''),
  );
}

/** A part of the local stack and a port it asked for. */
interface PartPort {
  readonly part: LocalPart;
  readonly port: number;
}

/**
 * A port of the local stack that something else already holds (`part`, `port`), and any other
 * fixed ones found taken with it (`alsoTaken`: another stack on the defaults holds them all); its
 * message is one actionable line naming every such port and the variable of each.
 */
export class PortInUseError extends Error {
  override readonly name = 'PortInUseError';
  constructor(
    readonly part: LocalPart,
    readonly port: number,
    readonly alsoTaken: readonly PartPort[] = [],
  ) {
    super(
      alsoTaken.length === 0
        ? `port ${port} (${PART_NAMES[part]}) is already in use: stop what holds it, or set ${LOCAL_PORT_VARIABLES[part]} to another port (0 picks any free port)`
        : severalInUse([{ part, port }, ...alsoTaken]),
    );
  }
}

/** `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

function severalInUse(taken: readonly PartPort[]): string {
  const ports = listed(taken.map(({ part, port }) => `${port} (${PART_NAMES[part]})`));
  const variables = listed(taken.map(({ part }) => LOCAL_PORT_VARIABLES[part]));
  return `ports ${ports} are already in use (another local stack?): stop what holds them, or set ${variables} to other ports (0 picks any free port)`;
}

/**
 * Listens on the port and resolves with the port got (a 0 made concrete). For a part of the stack,
 * a port something else holds is a PortInUseError, the one line naming the part's variable; without
 * a part (the backup relay's sink, a bench's) no variable sets the port, so the listen's own
 * EADDRINUSE is kept (`takenMeanwhile` reads its port), as is every other failure.
 * @throws PortInUseError when `part` is given and the port is taken.
 */
export function listenAs(
  part: LocalPart | undefined,
  server: Server,
  port: number,
  host: string,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const refuse = (error: NodeJS.ErrnoException) =>
      reject(part !== undefined && error.code === 'EADDRINUSE' ? new PortInUseError(part, port) : error);
    server.once('error', refuse);
    server.listen(port, host, () => {
      server.off('error', refuse);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}

/**
 * Turns every 0 into a concrete free port and checks that every fixed port is free, so a clash is
 * reported before anything starts (and names the variable to change). `taken` are ports another
 * part has claimed but may not listen on yet (MailDev's, claimed by `npm start` before the stack):
 * a free port may be chosen again once released, so a 0 never becomes one of them. A 0 is chosen
 * by `freePort`, below the kernel's ephemeral range, so that no other program's `listen(0)` or
 * outgoing connection is handed it before the part listens; what still slips through is started
 * again by the stack (`startAgainWhenTaken`).
 */
export async function claimPorts(
  ports: LocalPorts,
  host: string,
  taken: readonly number[] = [],
): Promise<LocalPorts> {
  const claimed: Partial<Record<LocalPart, number>> = {};
  // Fixed ports found taken: every one is checked, so that the one line names them all.
  const fixedTaken: PartPort[] = [];
  // A port fixed for a later part is not free for this one either, though nothing listens on it yet.
  const fixed = Object.values(ports).filter((port) => port !== 0);
  for (const part of Object.keys(ports) as LocalPart[]) {
    const wanted = ports[part];
    // Nor is a port chosen for an earlier part.
    const got =
      wanted === 0
        ? await freePortBesides(host, [...taken, ...fixed, ...Object.values(claimed)])
        : await listenOnce(wanted, host);
    if (wanted !== 0 && got === undefined) fixedTaken.push({ part, port: wanted });
    else if (got === undefined) throw new PortInUseError(part, wanted);
    else claimed[part] = got;
  }
  const [first, ...others] = fixedTaken;
  if (first !== undefined) throw new PortInUseError(first.part, first.port, others);
  return claimed as LocalPorts;
}

/**
 * The ports of the backup relay's sink and its viewer (DESIGN §15): each one given, or a free one
 * that no part of the stack has (`claimed`: most do not listen yet when these are chosen), nor
 * `taken`, nor the other of the two: `freePort` alone draws any of them one time in 12,768 each, and
 * two parts on one port end the start.
 */
export async function claimBackupPorts(
  asked: { readonly port?: number; readonly viewerPort?: number },
  claimed: LocalPorts,
  host: string,
  taken: readonly number[] = [],
): Promise<{ readonly smtp: number; readonly viewer: number }> {
  const inUse = [...Object.values(claimed), ...taken, asked.port ?? 0, asked.viewerPort ?? 0];
  const drawn = async (besides: readonly number[]) => {
    const port = await freePortBesides(host, besides);
    if (port === undefined) throw new Error(`no free port on ${host} besides the stack's own`);
    return port;
  };
  const smtp = asked.port || (await drawn(inUse));
  const viewer = asked.viewerPort || (await drawn([...inUse, smtp]));
  return { smtp, viewer };
}

/** How many times a part asked as 0 draws again when its draw is another part's port. */
const CLAIM_TRIES = 20;

/**
 * A free port (`freePort`) that is none of `inUse`: the ports of the stack's other parts, which may
 * not listen yet. Undefined when every draw was one of them.
 */
async function freePortBesides(host: string, inUse: readonly number[]): Promise<number | undefined> {
  for (let tries = 0; tries <= CLAIM_TRIES; tries += 1) {
    const port = await freePort(host);
    if (!inUse.includes(port)) return port;
  }
  return undefined;
}

/**
 * The port, and the part it was drawn for when the failure names one, when a start that failed with
 * `error` may simply start again: a port `claimPorts` chose for a part asked as 0 was taken by another
 * program between the choice and the part's listen. The failure's causes are walked, since `npm start`
 * wraps MailDev's. A port the user fixed (`asked`, before any claim, and `alsoFixed`, e.g.
 * `--backup-relay=PORT`) is never retried: its failure names what to change. Undefined for every
 * other failure.
 */
export function takenMeanwhile(
  error: unknown,
  asked: LocalPorts,
  alsoFixed: readonly number[] = [],
): { port: number; part?: LocalPart } | undefined {
  const fixed = new Set([...Object.values(asked).filter((port) => port !== 0), ...alsoFixed]);
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof PortInUseError) {
      return asked[cause.part] === 0 ? { port: cause.port, part: cause.part } : undefined;
    }
    const { code, port } = cause as NodeJS.ErrnoException & { port?: unknown };
    if (code === 'EADDRINUSE') return typeof port === 'number' && !fixed.has(port) ? { port } : undefined;
  }
  return undefined;
}

/** Starts tried before a port taken meanwhile ends the start (see `takenMeanwhile`). */
const STARTS = 3;

/**
 * `start`, tried again (up to three starts in all) when it failed on a port drawn for it that
 * another program took between the draw and the listen (`takenMeanwhile`: never a port the user
 * fixed). `start` must have stopped whatever it started before it rejects. The one home of that
 * retry: `startLocalStack` and `npm start` both start through it, never one inside the other (three
 * starts each would be nine): `npm start`'s covers MailDev's ports and the stack's, whose start it
 * calls once a time (`startLocalStackOnce`, decision 0302).
 */
export async function startAgainWhenTaken<T>(
  start: () => Promise<T>,
  asked: LocalPorts,
  alsoFixed: readonly number[],
  onStartAgain: (port: number) => void,
): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await start();
    } catch (error) {
      const taken = takenMeanwhile(error, asked, alsoFixed);
      if (taken === undefined) throw error;
      if (attempt >= STARTS) throw new DrawnPortsTakenError(taken, error);
      onStartAgain(taken.port);
    }
  }
}

/**
 * The last start failed, like the two before it, on a port drawn for a part and taken meanwhile: the
 * user asked for any free port, so "set the variable to another port" is no advice (decision 0304).
 */
export class DrawnPortsTakenError extends Error {
  override readonly name = 'DrawnPortsTakenError';
  constructor(taken: { port: number; part?: LocalPart }, cause: unknown) {
    const part = taken.part === undefined ? '' : ` (${PART_NAMES[taken.part]})`;
    super(
      `port ${taken.port}${part}, chosen as a free port, was taken by another program before it listened, ${STARTS} starts in a row: something on this machine takes free ports as fast as they are drawn; find it (ss -ltnp) and try again, or set the parts' ports to ones you keep free (docs/local-stack.md)`,
      { cause },
    );
  }
}

/** What a start that meets `startAgainWhenTaken`'s case says before it starts again. */
export function startingAgain(port: number): string {
  return `port ${port}, chosen for a part, was taken by another program meanwhile: stopping what started and starting again`;
}

/**
 * Settings the functions' environment does not carry from the Config: the stack points SMTP at the
 * sink or the relay itself, and the API key and the data directory are the stack's own.
 */
const SET_BY_THE_STACK: ReadonlySet<SettingName> = new Set(['smtpHost', 'smtpPort', 'apiKey', 'dataDir']);

/** The rows of lambdas/core/configSpec.ts the local stack passes to its functions. */
export const LOCAL_FUNCTION_SETTINGS = (Object.keys(CONFIG_SETTINGS) as SettingName[]).filter(
  (name) => !SET_BY_THE_STACK.has(name),
);

/**
 * The configuration as the functions read it (`loadConfig(env, 'local')`): the same variables the
 * CDK construct sets (lib/functionEnvironment.ts), so a Config given to the local stack is exactly
 * what its handlers see. SMTP is set by the stack itself (sink or relay): local/functionEnvironment.ts.
 */
export function configEnvironment(config: Config): Record<string, string> {
  return settingsEnvironment(settingValuesOf(config), LOCAL_FUNCTION_SETTINGS);
}
