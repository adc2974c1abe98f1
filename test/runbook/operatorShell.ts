/**
 * What every runbook walk (test/runbook/*.test.ts, decisions 0262 and 0281) does as the on-call
 * operator on a local stack: run `npx postdate …` against that stack's table and emulators, as
 * `--stack` would name them, and enqueue a message through the real HTTP API.
 */
import { expect } from 'vitest';
import { CONFIG_SETTINGS } from '../../lambdas/core/configSpec.js';
import { CLI_SETTINGS } from '../../lib/stackOutputs.js';
import type { LocalStack } from '../../local/localStack.js';
import { runBin, runMain } from '../cli/cliFixtures.js';

export type Postdate = (...args: string[]) => Promise<{ stdout: string; code: number }>;

/**
 * The operator's `postdate` against this stack: by default the CLI's main in this process
 * (`runMain`, decision 0274: the stack takes nothing from process.env, local/localStack.ts); with
 * `bin`, the real entry point `cli/postdate.mjs` in a process of its own. The shell is set up as
 * operations.md's "Tools and setup" sets it: the resource names, and the CLI's settings exported
 * from the functions' own environment (its loop over the relay's variables; `--stack` takes them
 * from the output `Settings`). `env` adds anything else.
 */
export function operatorCli(
  stack: LocalStack,
  { bin = false, env = {} }: { bin?: boolean; env?: Readonly<Record<string, string>> } = {},
): Postdate {
  const run = bin ? runBin : runMain;
  const settings = Object.fromEntries(
    CLI_SETTINGS.map((name) => CONFIG_SETTINGS[name].variable)
      .filter((variable) => stack.functionEnvironment[variable] !== undefined)
      .map((variable) => [variable, stack.functionEnvironment[variable] as string]),
  );
  return (...args) =>
    run(['--table', stack.tableName, ...args], {
      AWS_ENDPOINT_URL_DYNAMODB: stack.dynamodbEndpoint,
      AWS_ENDPOINT_URL_SQS: stack.sqsEndpoint,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_REGION: 'us-east-1',
      POSTDATE_SEND_DLQ_URL: stack.queueUrls.sendDeadLetter,
      POSTDATE_SEND_QUEUE_URL: stack.queueUrls.send,
      ...settings,
      ...env,
    });
}

/** POST /v1/messages with the stack's key; expects 202 and answers the message's id. */
export async function enqueue(
  stack: LocalStack,
  idempotencyKey: string,
  message: Readonly<Record<string, unknown>> = {},
): Promise<string> {
  const answer = await fetch(`${stack.apiUrl}/v1/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${stack.apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': idempotencyKey,
    },
    body: JSON.stringify({ to: ['ada@example.com'], subject: 'Runbook', text: 'Hello.', ...message }),
  });
  expect(answer.status, await answer.clone().text()).toBe(202);
  return ((await answer.json()) as { id: string }).id;
}

/** `messages show <id> --json`'s message. */
export async function shownMessage(
  postdate: Postdate,
  id: string,
): Promise<{ status: string; attempts: number; history: { outcome: string }[] }> {
  const { stdout } = await postdate('--json', 'messages', 'show', id);
  return (
    JSON.parse(stdout) as { message: { status: string; attempts: number; history: { outcome: string }[] } }
  ).message;
}
