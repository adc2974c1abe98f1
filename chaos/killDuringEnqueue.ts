import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { Command } from 'commander';
import { compressedTime } from './chaosTiming.js';
import { TERMINAL_STATUSES } from './checker.js';
import { seededRandom } from './seededRandom.js';
import { type StackChild, startStackChild } from './stackChild.js';

/**
 * A focused reproduction of "an enqueue acknowledged just before a SIGKILL of the whole stack was
 * lost": writers enqueue without pause while the stack process (with DynamoDB Local's JVM) is
 * SIGKILLed at a random moment and restarted on the same data dir; then every id the API answered
 * 202/200 for must be readable (GET 200) and reach a terminal state. Each round prints how many
 * acknowledgements came in the last second before the kill, and whether DynamoDB Local left a hot
 * journal behind, so that a loss can be placed in time.
 *
 * `npx tsx chaos/killDuringEnqueue.ts --rounds 5`
 */

const API_KEY = 'pd_chaos-durability-key-01';

interface Ack {
  readonly id: string;
  readonly key: string;
  readonly atMs: number;
  readonly pid: number;
}

export interface RoundResult {
  readonly acked: number;
  readonly ackedInLastSecond: number;
  readonly hotJournal: boolean;
  readonly missing: readonly { id: string; msBeforeKill: number; status: number }[];
  readonly notTerminal: readonly { id: string; status: string }[];
}

export async function killDuringEnqueue(options: {
  readonly seed: number;
  readonly writers: number;
  /** DynamoDB calls throttled in the stack process (its SDK retries them), as in the chaos run. */
  readonly throttleRate: number;
  /** Listing queries running next to the writers, as the chaos run's state counts before a kill. */
  readonly readers: number;
  readonly log: (line: string) => void;
}): Promise<RoundResult> {
  const random = seededRandom(options.seed);
  const dataDir = mkdtempSync(join(tmpdir(), 'postdate-durability-'));
  const env = {
    ...compressedTime(0.5),
    CHAOS_DATA_DIR: dataDir,
    CHAOS_THROTTLE_RATE: String(options.throttleRate),
    POSTDATE_API_KEY: API_KEY,
    POWERTOOLS_LOG_LEVEL: 'ERROR',
  };
  let current: StackChild | undefined = await startStackChild(env);
  const acks: Ack[] = [];
  let stopWriters = false;
  let counter = 0;
  const writer = async () => {
    while (!stopWriters) {
      counter += 1;
      const key = `durability-${options.seed}-${counter}`;
      const body = {
        to: [`d${counter}@chaos.test`],
        subject: `durability #${counter}`,
        text: 'kept across a SIGKILL',
        ...(random() < 0.5 ? { delay_seconds: 1 + Math.floor(random() * 6) } : {}),
      };
      for (;;) {
        const stack = current;
        if (!stack) {
          await sleep(100);
          continue;
        }
        try {
          const response = await fetch(`${stack.endpoints.apiUrl}/v1/messages`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${API_KEY}`,
              'content-type': 'application/json',
              'idempotency-key': key,
            },
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(30_000),
          });
          const answer = (await response.json()) as { id?: string };
          if (response.status === 202 || response.status === 200) {
            acks.push({ id: String(answer.id), key, atMs: Date.now(), pid: stack.endpoints.pid });
            break;
          }
          if (response.status < 500) throw new Error(`enqueue answered ${response.status}`);
        } catch (error) {
          if (error instanceof Error && error.message.startsWith('enqueue answered')) throw error;
        }
        await sleep(100);
      }
    }
  };
  const reader = async () => {
    while (!stopWriters) {
      const stack = current;
      if (stack) {
        for (const status of ['scheduled', 'sending', 'retrying', 'sent']) {
          await fetch(`${stack.endpoints.apiUrl}/v1/messages?status=${status}&limit=100`, {
            headers: { authorization: `Bearer ${API_KEY}` },
          }).then(
            (response) => response.arrayBuffer(),
            () => undefined,
          );
        }
      }
      await sleep(100);
    }
  };
  try {
    const writers = [
      ...Array.from({ length: options.writers }, writer),
      ...Array.from({ length: options.readers }, reader),
    ];
    await sleep(3000 + Math.floor(random() * 6000));
    const killedAt = Date.now();
    const doomed: StackChild = current;
    current = undefined;
    await doomed.kill();
    const dbDir = join(dataDir, 'dynamodb');
    const files = existsSync(dbDir) ? readdirSync(dbDir) : [];
    const hotJournal = files.some((file) => file.endsWith('-journal') || file.endsWith('-wal'));
    const ackedBeforeKill = acks.filter((ack) => ack.atMs <= killedAt);
    const ackedInLastSecond = ackedBeforeKill.filter((ack) => ack.atMs > killedAt - 1000).length;
    options.log(
      `killed after ${ackedBeforeKill.length} acknowledgements (${ackedInLastSecond} in its last second); files: ${files.join(', ')}`,
    );
    current = await startStackChild(env);
    await sleep(2000);
    stopWriters = true;
    await Promise.all(writers);
    const stack = current;

    const missing: { id: string; msBeforeKill: number; status: number }[] = [];
    const statuses = new Map<string, string>();
    const readAll = async () => {
      for (const ack of acks) {
        if (statuses.has(ack.id) && isTerminal(statuses.get(ack.id) ?? '')) continue;
        const response = await fetch(`${stack.endpoints.apiUrl}/v1/messages/${ack.id}`, {
          headers: { authorization: `Bearer ${API_KEY}` },
        });
        const view = (await response.json()) as { status?: string };
        if (response.status !== 200) {
          if (!missing.some((entry) => entry.id === ack.id))
            missing.push({ id: ack.id, msBeforeKill: killedAt - ack.atMs, status: response.status });
          statuses.set(ack.id, 'missing');
        } else statuses.set(ack.id, String(view.status));
      }
    };
    await readAll();
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline && [...statuses.values()].some((status) => !isTerminal(status))) {
      await sleep(2000);
      await readAll();
    }
    const notTerminal = [...statuses.entries()]
      .filter(([, status]) => !isTerminal(status))
      .map(([id, status]) => ({ id, status }));
    return { acked: acks.length, ackedInLastSecond, hotJournal, missing, notTerminal };
  } finally {
    stopWriters = true;
    await current?.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** A status the run may stop waiting on: one a message ends in, or a record gone (`missing`). */
function isTerminal(status: string): boolean {
  return status === 'missing' || (TERMINAL_STATUSES as readonly string[]).includes(status);
}

async function main(argv: readonly string[]): Promise<number> {
  const opts = new Command('kill-during-enqueue')
    .option('--rounds <n>', 'kill-and-restart rounds', '5')
    .option('--writers <n>', 'concurrent enqueue loops', '8')
    .option('--readers <n>', 'concurrent listing loops', '2')
    .option('--throttle-rate <r>', 'fraction of DynamoDB calls throttled', '0.03')
    .option('--seed <n>', 'first seed', String(Date.now() % 100_000))
    .parse(['node', 'kill-during-enqueue', ...argv])
    .opts<Record<string, string>>();
  let failures = 0;
  for (let round = 0; round < Number(opts.rounds); round += 1) {
    const seed = Number(opts.seed) + round;
    const result = await killDuringEnqueue({
      seed,
      writers: Number(opts.writers),
      readers: Number(opts.readers),
      throttleRate: Number(opts.throttleRate),
      log: (line) => console.log(`round ${round + 1} (seed ${seed}): ${line}`),
    });
    const ok = result.missing.length === 0 && result.notTerminal.length === 0;
    if (!ok) failures += 1;
    console.log(
      `round ${round + 1} (seed ${seed}): ${ok ? 'ok' : 'LOSS'}: ${result.acked} acknowledged, ` +
        `${result.missing.length} unknown to the API ${JSON.stringify(result.missing)}, ` +
        `${result.notTerminal.length} not terminal ${JSON.stringify(result.notTerminal.slice(0, 5))}, ` +
        `hot journal after the kill: ${result.hotJournal}`,
    );
  }
  return failures === 0 ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv.slice(2));
}
