import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command } from 'commander';
import { chaosTiming } from './chaosTiming.js';
import { runChaos } from './runChaos.js';

/**
 * `npm run chaos` (`tsx chaos/run.ts`): the chaos run from the command line; `--help` lists the
 * options. The run itself is chaos/runChaos.ts.
 */
async function main(argv: readonly string[]): Promise<number> {
  const program = new Command('chaos')
    .option('--messages <n>', 'messages to send', '10000')
    .option('--seed <n>', 'seed of the workload and the fault script', String(Date.now() % 1_000_000))
    .option(
      '--deadline <seconds>',
      'seconds to wait for terminal states after the last enqueue, then on while mail still moves (default: max(120, lease + 90, N/10))',
    )
    .option('--kills <n>', 'SIGKILLs of the stack (including the one ending the AUTH-failure phase)', '3')
    .option('--auth-failure-seconds <n>', 'how long the first stack logs in with a wrong SMTP password', '8')
    .option(
      '--relay-outage-seconds <n>',
      'a relay outage (421 at the greeting) this long, once sending is under way',
      '20',
    )
    .option(
      '--relays <n>',
      'relays in POSTDATE_RELAYS (1 or 2); with 2, the outage phase is one outage of each, overlapping',
      '1',
    )
    .option('--smtp-fault-rate <r>', 'fraction of SMTP transactions with a 4xx/5xx/drop fault', '0.12')
    .option('--stall-rate <r>', 'fraction of SMTP transactions that stall past the timeout', '0.003')
    .option('--slow-relay-rate <r>', 'fraction of SMTP transactions answered 20–35 s after the dot', '0.005')
    .option('--slow-replies <n>', 'SMTP transactions answered 35 s after the dot, spread over the run', '3')
    .option('--throttle-replies <n>', "transactions answered SES's 454 throttle, spread over the run", '3')
    .option(
      '--outcome-write-failure-rate <r>',
      'fraction of messages whose first outcome write fails on every SDK attempt',
      '0.03',
    )
    .option(
      '--read-failure-rate <r>',
      "fraction of the sender's body and group reads that fail whole",
      '0.02',
    )
    .option('--max-send-rate <n>', 'POSTDATE_MAX_SEND_RATE of the stack (0: unlimited)', '10')
    .option('--throttle-rate <r>', 'fraction of DynamoDB calls throttled', '0.03')
    .option('--replay-rate <r>', 'fraction of stream batches handed to the relay twice', '0.3')
    .option('--duplicate-rate <r>', 'extra SQS copies per accepted message (most of recent ones)', '1')
    .option('--scheduler-twice-rate <r>', 'fraction of schedule firings delivered twice', '0.2')
    .option(
      '--scheduler-late-rate <r>',
      'fraction of schedules fired late (0.5 s to --scheduler-late-ms)',
      '0.2',
    )
    .option('--scheduler-late-ms <n>', 'latest late firing, ms', '5000')
    .option('--sender-kills <n>', 'SIGKILLs of the sender process alone, at an SMTP moment', '4')
    .option('--webhook-failure-rate <r>', 'fraction of webhook POSTs the receiver answers 500', '0.1')
    .option(
      '--webhook-stall-rate <r>',
      'fraction of webhook POSTs the receiver stalls past the 10 s timeout',
      '0.03',
    )
    .option('--webhook-deadline <seconds>', 'seconds to wait for the last events once all is terminal', '180')
    .option('--concurrency <n>', 'client requests in flight', '8')
    .option('--time-scale <x>', 'multiplies the delays of the workload', '1')
    .option(
      '--out <file>',
      'JSON report',
      join(
        dirname(fileURLToPath(import.meta.url)),
        'reports',
        `chaos-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
      ),
    )
    .parse(['node', 'chaos', ...argv]);
  const opts = program.opts<Record<string, string | undefined>>();
  const messages = Number(opts.messages);
  const relays = Number(opts.relays);
  if (relays !== 1 && relays !== 2) {
    console.error(`--relays must be 1 or 2, got ${opts.relays}`);
    return 2;
  }
  const outcome = await runChaos({
    messages,
    seed: Number(opts.seed),
    // Past the last enqueue, a kill's leases must run out before the sweeper can take them over.
    deadlineSeconds: Number(
      opts.deadline ??
        Math.max(120, chaosTiming(Number(opts.timeScale)).leaseSeconds + 90, Math.ceil(messages / 10)),
    ),
    kills: Number(opts.kills),
    authFailureSeconds: Number(opts.authFailureSeconds),
    relayOutageSeconds: Number(opts.relayOutageSeconds),
    relays,
    smtpFaultRate: Number(opts.smtpFaultRate),
    stallRate: Number(opts.stallRate),
    slowRelayRate: Number(opts.slowRelayRate),
    slowReplies: Number(opts.slowReplies),
    throttleReplies: Number(opts.throttleReplies),
    outcomeWriteFailureRate: Number(opts.outcomeWriteFailureRate),
    readFailureRate: Number(opts.readFailureRate),
    ...(Number(opts.maxSendRate) > 0 ? { maxSendRate: Number(opts.maxSendRate) } : {}),
    throttleRate: Number(opts.throttleRate),
    replayRate: Number(opts.replayRate),
    duplicateCopyRate: Number(opts.duplicateRate),
    schedulerFireTwiceRate: Number(opts.schedulerTwiceRate),
    schedulerLateRate: Number(opts.schedulerLateRate),
    schedulerLateMs: Number(opts.schedulerLateMs),
    senderKills: Number(opts.senderKills),
    webhooks: {
      failureRate: Number(opts.webhookFailureRate),
      stallRate: Number(opts.webhookStallRate),
      deadlineSeconds: Number(opts.webhookDeadline),
    },
    concurrency: Number(opts.concurrency),
    timeScale: Number(opts.timeScale),
    reportPath: String(opts.out),
  });
  return outcome.exitCode;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv.slice(2));
}
