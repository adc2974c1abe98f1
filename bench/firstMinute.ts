import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { LOCAL_PORT_VARIABLES } from '../local/localEnv.js';
import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { withinGoal } from './benchResult.js';
import { median, round, sleep } from './stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);

/** Issue 29's goals: ready, the first message, a CLI command. */
const GOAL_READY_S = 5;
const GOAL_FIRST_IMMEDIATE_S = 1;
const GOAL_CLI_S = 1;
/** The first deferred message may be this much later than the median of the next twenty (poll granularity). */
const GOAL_FIRST_DEFERRED_EXTRA_S = 0.1;

/** Every port of the stack picked freely (the S3 emulator's too), so a stack on the defaults does not collide. */
const FREE_PORTS = Object.fromEntries(Object.values(LOCAL_PORT_VARIABLES).map((name) => [name, '0']));

interface Started {
  readonly child: ChildProcess;
  readonly readySeconds: number;
  readonly apiUrl: string;
  readonly apiKey: string;
  readonly viewerUrl: string;
}

/** `npm start` as a person runs it (its own process group, free ports); resolves at the banner. */
async function npmStart(): Promise<Started> {
  const began = performance.now();
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...process.env, ...FREE_PORTS, POSTDATE_LOG: 'quiet' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.resume();
  const deadline = Date.now() + 300_000;
  while (!out.includes('Ctrl-C stops everything.')) {
    if (Date.now() > deadline || child.exitCode !== null) {
      stop(child);
      throw new Error(`npm start did not say ready: ${out.slice(-400)}`);
    }
    await sleep(20);
  }
  const readySeconds = (performance.now() - began) / 1000;
  const apiUrl = /API {10}(http:\/\/\S+)/.exec(out)?.[1];
  const apiKey = /API key {6}(\S+)/.exec(out)?.[1];
  const viewerUrl = /Mail viewer {2}(http:\/\/\S+?)\/?\s/.exec(out)?.[1];
  if (!apiUrl || !apiKey || !viewerUrl) {
    stop(child);
    throw new Error(`the banner lacks the API, its key or MailDev: ${out.slice(-600)}`);
  }
  return { child, readySeconds, apiUrl, apiKey, viewerUrl };
}

function stop(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGINT');
  } catch {}
}

async function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  stop(child);
  await exited;
}

async function enqueue(stack: Started, subject: string, sendAt?: Date): Promise<number> {
  const response = await fetch(`${stack.apiUrl}/v1/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${stack.apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': subject,
    },
    body: JSON.stringify({
      to: ['bench@example.com'],
      subject,
      text: 'The first minute.',
      ...(sendAt ? { send_at: sendAt.toISOString() } : {}),
    }),
  });
  if (response.status !== 202) throw new Error(`enqueue answered ${response.status}`);
  await response.body?.cancel();
  return performance.now();
}

/** Polls MailDev's REST API until every subject has arrived; the time each was first seen. */
async function arrivals(viewerUrl: string, subjects: readonly string[], withinMs: number) {
  const seen = new Map<string, number>();
  const deadline = Date.now() + withinMs;
  while (seen.size < subjects.length) {
    if (Date.now() > deadline) throw new Error(`${subjects.length - seen.size} mail(s) never arrived`);
    const list = (await (await fetch(`${viewerUrl}/api/email`)).json()) as { subject?: string }[];
    const now = performance.now();
    for (const mail of list) {
      // Only the subjects asked for: MailDev also holds the mail of earlier rounds.
      if (mail.subject && subjects.includes(mail.subject) && !seen.has(mail.subject))
        seen.set(mail.subject, now);
    }
    await sleep(10);
  }
  return seen;
}

function budgetRow(metric: string, value: number, unit: string, max: number, note?: string): BenchRow {
  return {
    metric,
    value: round(value, 2),
    unit,
    goal: `≤ ${max} ${unit}`,
    pass: withinGoal(value, { max }),
    ...(note ? { note } : {}),
  };
}

/**
 * The first minute of a new user (issue 29): `npm start` until ready (a few runs); with the last
 * stack, the first immediate message after ready to the relay (MailDev), the first deferred
 * message's lateness beside the median of the next twenty, and a CLI command's median time.
 */
export async function firstMinute(options: BenchOptions): Promise<BenchResult> {
  const began = performance.now();
  const runs = options.quick ? 1 : 3;
  const readyTimes: number[] = [];
  let stack: Started | undefined;
  for (let i = 0; i < runs; i++) {
    if (stack) await stopped(stack.child);
    stack = await npmStart();
    readyTimes.push(stack.readySeconds);
    options.log(`  ready in ${round(stack.readySeconds, 1)} s`);
  }
  if (!stack) throw new Error('no run');
  try {
    const tag = Date.now().toString(36);
    // The first immediate message, as soon as ready was said.
    const immediate = `first-immediate-${tag}`;
    const accepted = await enqueue(stack, immediate);
    const firstImmediate =
      ((await arrivals(stack.viewerUrl, [immediate], 60_000)).get(immediate) ?? 0) - accepted;

    // The first deferred message, then twenty more, each due 3 s after its enqueue.
    const count = options.quick ? 5 : 20;
    const lateness = async (subjects: readonly string[]) => {
      const due = new Map<string, number>();
      for (const subject of subjects) {
        const at = new Date(Date.now() + 3_000);
        await enqueue(stack as Started, subject, at);
        due.set(subject, performance.now() + (at.getTime() - Date.now()));
      }
      const seen = await arrivals((stack as Started).viewerUrl, subjects, 120_000);
      return subjects.map((subject) => ((seen.get(subject) ?? 0) - (due.get(subject) ?? 0)) / 1000);
    };
    const [firstDeferred = Number.NaN] = await lateness([`first-deferred-${tag}`]);
    const next = await lateness(Array.from({ length: count }, (_, i) => `deferred-${tag}-${i}`));
    const nextMedian = median(next);

    // A CLI command, as a script runs it: the bin, against this stack (found through its stack file).
    const cliTimes: number[] = [];
    for (let i = 0; i < (options.quick ? 3 : 10); i++) {
      const start = performance.now();
      await run(process.execPath, ['cli/postdate.mjs', 'sending', 'status', '--json'], { cwd: ROOT });
      cliTimes.push((performance.now() - start) / 1000);
    }

    const rows: BenchRow[] = [
      budgetRow(
        'npm start → ready (median)',
        median(readyTimes),
        's',
        GOAL_READY_S,
        `runs: ${readyTimes.map((t) => round(t, 1)).join(', ')}`,
      ),
      budgetRow(
        'first immediate message after ready → relay',
        firstImmediate / 1000,
        's',
        GOAL_FIRST_IMMEDIATE_S,
      ),
      {
        metric: 'first deferred message: lateness',
        value: round(firstDeferred, 2),
        unit: 's',
        baseline: { label: `median of the next ${count}`, value: round(nextMedian, 2) },
        comparison: { kind: 'difference', value: round(firstDeferred - nextMedian, 2) },
        goal: `≤ median + ${GOAL_FIRST_DEFERRED_EXTRA_S} s`,
        pass: withinGoal(firstDeferred - nextMedian, { max: GOAL_FIRST_DEFERRED_EXTRA_S }),
      },
      budgetRow('postdate sending status --json (median)', median(cliTimes), 's', GOAL_CLI_S),
    ];
    return {
      name: 'first-minute',
      title: 'The first minute: ready, the first messages, a CLI command (issue 29)',
      rows,
      details: { readyTimes, firstImmediateMs: firstImmediate, firstDeferred, next, cliTimes },
      seconds: (performance.now() - began) / 1000,
    };
  } finally {
    await stopped(stack.child);
  }
}
