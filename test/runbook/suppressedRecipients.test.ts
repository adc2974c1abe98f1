/**
 * docs/runbook.md procedure 6 (a recipient suppressed; `BouncesErrors`, `BounceFailures`), walked as
 * the on-call operator walks it (decision 0295): the local stack in front of a real relay
 * (smtp-server, local/smtp/controllableSmtpServer.ts) that refuses every mailbox whose local part
 * starts with `gone` with `550 5.1.1` at RCPT TO, keys of tenant `acme` made with `postdate keys
 * create` (live and `--test`), and every step's `npx postdate suppressions …` as written. What the
 * relay received decides who was mailed.
 *
 * Step 4 needs SES, SNS and Lambda's asynchronous invocation, none of which runs locally
 * (local/EMULATORS.md). What can be walked is: the bounces function's real entry point
 * (lambdas/bounces/handler.ts) failing on a cause of ours (deployed with a table it cannot read) on
 * an SES-shaped SNS event, Lambda's on-failure record of it on a queue of the stack's SQS emulator,
 * then the step's own `aws sqs receive-message`, `node -pe` and `aws sqs delete-message`, with the
 * fixed function (a new cold start) invoked with the record's `requestPayload`, twice. `aws logs
 * tail` and `aws lambda invoke` are AWS's. The alarms are read from the synthesized template.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CreateQueueCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SNSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { POSTDATE_FUNCTIONS } from '../../lambdas/core/postdateFunctions.js';
import { lambdaContext } from '../../local/http/lambdaContext.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { permanentBounce, snsEvent } from '../bounces/sesNotifications.js';
import { synthesizePostdate, TEST_PROPS } from '../cdk/support/synthesize.js';
import { eventually } from '../support/eventually.js';
import {
  awsCli,
  capturedLogs,
  localClientOptions,
  operatorCli,
  type Postdate,
  queueDepth,
} from './operatorShell.js';

const RUNBOOK = readFileSync(join(import.meta.dirname, '../../docs/runbook.md'), 'utf8');
const PROCEDURE = RUNBOOK.slice(RUNBOOK.indexOf('## 6. '), RUNBOOK.indexOf('## 7. '));
/** The addresses of the walk: none may appear in a function's log line (DESIGN §6). */
const MAILBOXES = ['gone@', 'gone-a@', 'gone-b@', 'gone-c@', 'carol@', 'dana@', 'bounce@simulator'];

interface Shown {
  readonly status: string;
  readonly recipients: { accepted: number; pending: number; rejected: number; suppressed: number };
}
interface Entry {
  readonly address: string;
  readonly reason: string;
  readonly message_id: string | null;
  readonly created_at: string;
}

describe('runbook procedure 6: a recipient suppressed, and SES feedback failing', () => {
  let relay: TestSmtpServer;
  let stack: LocalStack;
  let postdate: Postdate;
  let logs: ReturnType<typeof capturedLogs>;
  /** The function log lines written while a CLI command ran in this process (runMain captured them). */
  const cliLogLines: string[] = [];
  const keys = { live: '', test: '' };
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    logs = capturedLogs({ echo: false });
    relay = await startSmtpServer();
    relay.script({
      rcptTo: (address) =>
        /^gone[^@]*@/i.test(address)
          ? { code: 550, message: `5.1.1 <${address}>: Recipient address rejected: User unknown` }
          : undefined,
    });
    const config = loadConfig(
      {
        POSTDATE_API_KEY: 'pd_runbook-suppressions-01',
        SMTP_HOST: relay.host,
        SMTP_PORT: String(relay.port),
      },
      'local',
    );
    // Not quiet: the functions log at INFO, as deployed, and every line is read for addresses.
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, log: () => undefined });
    const cli = operatorCli(stack);
    postdate = async (...args) => {
      const result = await cli(...args);
      const lines = result.stdout.split('\n');
      const isLog = (line: string) => line.startsWith('{') && line.includes('"service":"postdate-');
      cliLogLines.push(...lines.filter(isLog));
      return { ...result, stdout: lines.filter((line) => !isLog(line)).join('\n') };
    };
    for (const side of ['live', 'test'] as const) {
      const created = await postdate(
        '--json',
        'keys',
        'create',
        '--tenant',
        'acme',
        ...(side === 'test' ? ['--test'] : []),
      );
      expect(created.code, created.stdout).toBe(0);
      keys[side] = (JSON.parse(created.stdout) as { secret: string }).secret;
    }
  }, 90_000);

  afterAll(async () => {
    vi.unstubAllEnvs();
    await stack?.stop();
    await relay?.close();
    logs?.restore();
  });

  /** POST /v1/messages as tenant acme (its live key, or its test key): the new message's id. */
  async function enqueue(key: string, body: Record<string, unknown>, side: 'live' | 'test' = 'live') {
    const answer = await fetch(`${stack.apiUrl}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${keys[side]}`,
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      body: JSON.stringify({ subject: 'Your order', text: 'Hello.', ...body }),
    });
    expect(answer.status, await answer.clone().text()).toBe(202);
    return ((await answer.json()) as { id: string }).id;
  }
  /** `messages show <id>`, as text and as `--json`. */
  async function shown(id: string): Promise<{ text: string; json: Shown & { explanation: string } }> {
    const { message, explanation } = JSON.parse(
      (await postdate('--json', 'messages', 'show', id)).stdout,
    ) as {
      message: Shown;
      explanation: { status: string };
    };
    // The text after the JSON: a message the JSON shows ended shows the same in the text.
    const text = (await postdate('messages', 'show', id)).stdout;
    return { text, json: { ...message, explanation: explanation.status } };
  }
  async function settled(id: string) {
    return eventually(
      `message ${id} settled`,
      async () => {
        const seen = await shown(id);
        return ['sent', 'failed', 'suppressed'].includes(seen.json.status) ? seen : undefined;
      },
      { withinMs: 30_000, everyMs: 200 },
    );
  }
  /** `suppressions list --tenant T --all --json`'s entries. */
  async function listed(tenant: string): Promise<Entry[]> {
    const { stdout, code } = await postdate('--json', 'suppressions', 'list', '--tenant', tenant, '--all');
    expect(code, stdout).toBe(0);
    return (JSON.parse(stdout) as { items: Entry[] }).items;
  }
  /** The envelope the relay accepted for a message (its RCPT TOs that got 250), or undefined. */
  const envelopeOf = (id: string) => relay.deliveries().find((mail) => mail.postdateId === id)?.to;

  it('step 1: a 5.1.1 at RCPT TO suppresses that mailbox with the message id; the next message leaves it out or ends suppressed', async () => {
    ids.first = await enqueue('p6-first', {
      to: ['Gone <Gone@Example.org>', 'gone-c@example.org', 'ada@example.org'],
    });
    ids.pair = await enqueue('p6-pair', {
      to: ['gone-a@example.org', 'gone-b@example.org', 'ada@example.org'],
    });
    ids.simulated = await enqueue('p6-simulated', { to: [`bounce@simulator.postdate.test`] }, 'test');
    for (const id of [ids.first, ids.pair]) expect((await settled(id as string)).json.status).toBe('sent');
    expect((await settled(ids.simulated as string)).json.status).toBe('failed');
    expect(envelopeOf(ids.first as string)).toEqual(['ada@example.org']);

    // The tenant's list, as step 1 writes it: each refused mailbox, lower-cased, hard_bounce, its message.
    const table = await postdate('suppressions', 'list', '--tenant', 'acme', '--all');
    expect(table.code, table.stdout).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`gone@example\\.org\\s+hard_bounce\\s+${ids.first}`));
    expect(table.stdout).toMatch(new RegExp(`gone-a@example\\.org\\s+hard_bounce\\s+${ids.pair}`));
    expect((await listed('acme')).map((entry) => entry.address)).toEqual([
      'gone-a@example.org',
      'gone-b@example.org',
      'gone-c@example.org',
      'gone@example.org',
    ]);
    // The test side's list holds the simulator's bounce only, and the live one never sees it (§14).
    expect(await listed('acme.test')).toEqual([
      expect.objectContaining({
        address: 'bounce@simulator.postdate.test',
        reason: 'hard_bounce',
        message_id: ids.simulated,
      }),
    ]);

    // All recipients suppressed: `suppressed`, no MAIL FROM at the relay; the words name acme's list.
    const transactions = relay.transactions;
    ids.allSuppressed = await enqueue('p6-all-suppressed', { to: ['GONE@example.org'] });
    const all = await settled(ids.allSuppressed);
    expect(all.json).toMatchObject({
      status: 'suppressed',
      recipients: { accepted: 0, pending: 0, rejected: 0, suppressed: 1 },
    });
    expect(all.json.explanation).toContain('`postdate suppressions list --tenant acme --all`');
    expect(relay.transactions).toBe(transactions);

    // Some suppressed: sent, the relay's envelope without it, the count on the message.
    ids.some = await enqueue('p6-some-suppressed', { to: ['gone@example.org', 'bob@example.org'] });
    const some = await settled(ids.some);
    expect(some.json).toMatchObject({
      status: 'sent',
      recipients: { accepted: 1, pending: 0, rejected: 0, suppressed: 1 },
    });
    expect(some.text).toMatch(/recipients:\s+accepted 1, pending 0, rejected 0, suppressed 1/);
    expect(envelopeOf(ids.some)).toEqual(['bob@example.org']);
  }, 90_000);

  it('step 2: remove one address and the entries one message added (dry run first); mail goes again, suppressed messages stay', async () => {
    relay.script(); // the mailboxes exist now: the relay takes every recipient
    const removed = await postdate('suppressions', 'remove', 'gone@example.org', '--tenant', 'acme');
    expect(removed.code, removed.stdout).toBe(0);
    expect(removed.stdout).toContain(
      'removed gone@example.org from the suppression list of tenant acme (was hard_bounce)',
    );

    const dryRun = await postdate(
      'suppressions',
      'remove',
      '--message',
      ids.pair as string,
      '--tenant',
      'acme',
      '--dry-run',
    );
    expect(dryRun.code, dryRun.stdout).toBe(0);
    expect(dryRun.stdout).toContain(
      `would remove 2 addresses message ${ids.pair} added to the list of tenant acme`,
    );
    expect((await listed('acme')).map((entry) => entry.address)).toEqual([
      'gone-a@example.org',
      'gone-b@example.org',
      'gone-c@example.org',
    ]);
    const undone = await postdate(
      'suppressions',
      'remove',
      '--message',
      ids.pair as string,
      '--tenant',
      'acme',
    );
    expect(undone.code, undone.stdout).toBe(0);
    expect(undone.stdout).toContain(
      `removed 2 addresses message ${ids.pair} added to the list of tenant acme`,
    );
    // Only that message's: the first one's other entry stays.
    expect((await listed('acme')).map((entry) => entry.address)).toEqual(['gone-c@example.org']);
    expect((await listed('acme.test')).map((entry) => entry.address)).toEqual([
      'bounce@simulator.postdate.test',
    ]);
    const again = await postdate(
      'suppressions',
      'remove',
      '--message',
      ids.pair as string,
      '--tenant',
      'acme',
    );
    expect(again.code, again.stdout + again.stderr).toBe(4);

    // A change applies to sends within 5 s (decision 0173): a message due 6 s after the removals goes
    // to the three removed, whatever the senders' lookups held, and still leaves out the one listed.
    const due = new Date(Date.now() + 6_000).toISOString();
    ids.again = await enqueue('p6-mail-again', {
      to: ['gone@example.org', 'gone-a@example.org', 'gone-b@example.org', 'gone-c@example.org'],
      send_at: due,
    });
    expect((await settled(ids.again)).json).toMatchObject({
      status: 'sent',
      recipients: { accepted: 3, pending: 0, rejected: 0, suppressed: 1 },
    });
    expect(envelopeOf(ids.again)?.toSorted()).toEqual([
      'gone-a@example.org',
      'gone-b@example.org',
      'gone@example.org',
    ]);
    expect((await shown(ids.allSuppressed as string)).json.status).toBe('suppressed');
    expect(envelopeOf(ids.allSuppressed as string)).toBeUndefined();
  }, 90_000);

  it('step 3: an address added by hand, in any case, stops mail to it on the live side only', async () => {
    const added = await postdate(
      'suppressions',
      'add',
      'Carol@Example.org',
      '--tenant',
      'acme',
      '--reason',
      'manual',
    );
    expect(added.code, added.stdout).toBe(0);
    expect(added.stdout).toMatch(/^suppressed carol@example\.org for tenant acme \(manual, since /);
    expect(await listed('acme')).toEqual([
      expect.objectContaining({ address: 'carol@example.org', reason: 'manual', message_id: null }),
      expect.objectContaining({ address: 'gone-c@example.org', message_id: ids.first }),
    ]);
    ids.manual = await enqueue('p6-manual', { to: ['CAROL@example.org', 'ada@example.org'] });
    expect((await settled(ids.manual)).json).toMatchObject({
      status: 'sent',
      recipients: { accepted: 1, pending: 0, rejected: 0, suppressed: 1 },
    });
    expect(envelopeOf(ids.manual)).toEqual(['ada@example.org']);
    // The live list is not the test side's: a test key's message to the address is not suppressed.
    ids.testSide = await enqueue('p6-test-side', { to: ['carol@example.org'] }, 'test');
    expect((await settled(ids.testSide)).json).toMatchObject({
      status: 'sent',
      recipients: { accepted: 1, suppressed: 0 },
    });
  }, 60_000);

  it('step 4: a notification the bounces function failed on is replayed from its failure queue, twice harmlessly', async () => {
    ids.bounced = await enqueue('p6-ses-bounced', { to: ['dana@example.org'] });
    expect((await settled(ids.bounced)).json.status).toBe('sent');
    // SES reports the accepted message's permanent bounce afterwards, to the topic the function hears.
    const event = snsEvent(permanentBounce(ids.bounced, ['Dana@Example.org']));

    // The function deployed with a table it cannot read (a cause of ours): each of Lambda's three
    // invocations throws (BouncesErrors), and Lambda puts its on-failure record on the queue.
    const sqs = new SQSClient(localClientOptions(stack.sqsEndpoint));
    const { QueueUrl: BFQ } = await sqs.send(
      new CreateQueueCommand({ QueueName: `postdate-bounces-failures-${Date.now()}` }),
    );
    const broken = await bouncesFunction('postdate-no-such-table');
    const failures: Error[] = [];
    for (let invocation = 0; invocation < 3; invocation++) {
      failures.push(
        await broken(event).then(
          () => new Error('answered'),
          (error: Error) => error,
        ),
      );
    }
    expect(failures.map((error) => error.name)).toEqual(Array(3).fill('ResourceNotFoundException'));
    for (const error of failures)
      for (const mailbox of MAILBOXES) expect(error.message).not.toContain(mailbox);
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: BFQ,
        MessageBody: JSON.stringify(onFailureRecord(event, failures[0] as Error)),
      }),
    );
    sqs.destroy();
    const aws = (...args: string[]) => awsCli(stack, ...args);
    const depth = () => queueDepth(stack, BFQ as string);
    expect(await depth()).toBe(1);

    // The cause fixed (the function deployed again: a cold start with the right table), then step 4.
    const fixed = await bouncesFunction(stack.tableName);
    const receive = `aws sqs receive-message --queue-url "$BFQ" --query 'Messages[0].[ReceiptHandle,Body]' --output text`;
    const extract = `node -pe 'JSON.stringify(JSON.parse(process.argv[1]).requestPayload)' "$BODY" > p.json`;
    expect(PROCEDURE).toContain(receive);
    expect(PROCEDURE).toContain(extract);
    const received = await aws(
      'sqs',
      'receive-message',
      '--queue-url',
      BFQ as string,
      '--query',
      'Messages[0].[ReceiptHandle,Body]',
      '--output',
      'text',
    );
    // `read -r RH BODY`: the first field, and the rest.
    const [RH, BODY] = [
      received.slice(0, received.search(/\s/)),
      received.slice(received.search(/\s/)).trim(),
    ];
    const payload = execFileSync(
      'node',
      ['-pe', 'JSON.stringify(JSON.parse(process.argv[1]).requestPayload)', BODY],
      {
        encoding: 'utf8',
      },
    );
    const requestPayload = JSON.parse(payload) as SNSEvent;
    expect(await fixed(requestPayload)).toEqual({ added: 1, ignored: 0 });
    const first = await listed('acme');
    expect(await fixed(requestPayload)).toEqual({ added: 1, ignored: 0 });
    expect(await listed('acme')).toEqual(first);
    expect(first).toContainEqual(
      expect.objectContaining({
        address: 'dana@example.org',
        reason: 'hard_bounce',
        message_id: ids.bounced,
      }),
    );
    await aws('sqs', 'delete-message', '--queue-url', BFQ as string, '--receipt-handle', RH);
    expect(await depth()).toBe(0);

    // Verify: the next message to the address is left out. A sender may judge by a lookup up to 5 s
    // old (decision 0173), and one looked dana up when it sent `ids.bounced` seconds ago: the message
    // is due 6 s after the add, as step 2's is.
    ids.afterBounce = await enqueue('p6-after-bounce', {
      to: ['dana@example.org'],
      send_at: new Date(Date.now() + 6_000).toISOString(),
    });
    expect((await settled(ids.afterBounce)).json.status).toBe('suppressed');
    expect(envelopeOf(ids.afterBounce)).toBeUndefined();
  }, 60_000);

  it('no function wrote an address of the walk into its log', () => {
    const lines = [...POSTDATE_FUNCTIONS.flatMap((name) => logs.of(`postdate-${name}`)), ...cliLogLines];
    // The functions that ran logged at INFO: the sender, the api, the bounces function among them.
    for (const name of ['api', 'sender', 'bounces'])
      expect(
        lines.some((line) => line.includes(`"service":"postdate-${name}"`)),
        name,
      ).toBe(true);
    for (const mailbox of MAILBOXES)
      expect(lines.filter((line) => line.toLowerCase().includes(mailbox))).toEqual([]);
  });

  /**
   * The bounces function's deployed entry (lambdas/bounces/handler.ts) as a fresh cold start of a
   * deployment whose table is `tableName`: its environment is process.env, read on first invocation.
   */
  async function bouncesFunction(tableName: string): Promise<(event: SNSEvent) => Promise<unknown>> {
    vi.resetModules();
    vi.stubEnv('POSTDATE_LOCAL', 'true');
    vi.stubEnv('POSTDATE_TABLE_NAME', tableName);
    vi.stubEnv('POSTDATE_MESSAGE_ID_DOMAIN', stack.functionEnvironment.POSTDATE_MESSAGE_ID_DOMAIN as string);
    vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', stack.dynamodbEndpoint);
    vi.stubEnv('AWS_REGION', 'us-east-1');
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'local');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'true');
    const { handler } = await import('../../lambdas/bounces/handler.js');
    return (event) => handler(event, lambdaContext('postdate-bounces', 30_000));
  }
});

/**
 * What Lambda puts on an asynchronous invocation's on-failure destination once its retries are
 * spent (Lambda developer guide, "Capturing records of asynchronous invocations").
 */
function onFailureRecord(event: SNSEvent, error: Error) {
  return {
    version: '1.0',
    timestamp: new Date().toISOString(),
    requestContext: {
      requestId: 'e4b46cbf-b738-43b8-8ffe-9c2c4e3f0b3f',
      functionArn:
        'arn:aws:lambda:eu-west-1:123456789012:function:Postdate-PostdateBouncesHandlerFunction:$LATEST',
      condition: 'RetriesExhausted',
      approximateInvokeCount: 3,
    },
    requestPayload: event,
    responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
    responsePayload: { errorType: error.name, errorMessage: error.message, trace: [] },
  };
}

describe("procedure 6's alarms in the synthesized template", () => {
  it('BouncesErrors counts the errors of the bounces function; BounceFailures the visible records on its on-failure queue', () => {
    const { Resources } = synthesizePostdate({
      ...TEST_PROPS,
      env: { account: '123456789012', region: 'eu-west-1' },
      sesNotificationTopicArns: ['arn:aws:sns:eu-west-1:123456789012:ses-feedback'],
    }).template.toJSON() as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const of = (type: string, part: string) =>
      Object.entries(Resources).filter(([id, resource]) => resource.Type === type && id.includes(part));
    // The shell's `fn BouncesHandler` and the step's `contains(LogicalResourceId,'BouncesFailureQueue')`.
    const functions = of('AWS::Lambda::Function', 'BouncesHandler');
    expect(functions).toHaveLength(1);
    const fn = functions[0]?.[0] as string;
    const queues = of('AWS::SQS::Queue', 'BouncesFailureQueue');
    expect(queues).toHaveLength(1);
    const queue = queues[0]?.[0] as string;
    const invokeConfigs = of('AWS::Lambda::EventInvokeConfig', 'BouncesHandler');
    expect(invokeConfigs).toHaveLength(1);
    expect(invokeConfigs[0]?.[1].Properties).toMatchObject({
      FunctionName: { Ref: fn },
      MaximumRetryAttempts: 2,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
    });
    const alarm = (name: string) => {
      const found = of('AWS::CloudWatch::Alarm', name);
      expect(found, name).toHaveLength(1);
      return found[0]?.[1].Properties;
    };
    expect(alarm('BouncesErrors')).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: fn } }],
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    expect(alarm('BounceFailures')).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queue, 'QueueName'] } }],
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
  });
});
