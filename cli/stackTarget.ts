/**
 * `postdate --stack NAME`: the resource names come from the outputs of the deployed stack
 * (DescribeStacks), so an operator never copies a table name, a queue URL or an ARN by hand
 * (DESIGN §6). The outputs are the ones lib/PostdateStack.ts writes (lib/stackOutputs.ts).
 *
 * Precedence: a flag given on the command line, then the stack's output, then the environment. Only
 * `TableName` is required; a stack without another output (one deployed before it existed) leaves
 * that name to the flags and the environment, and the command that needs it says what to pass.
 *
 * The settings the CLI decides with (a retry's attempts, the retention, the Message-ID domain:
 * lib/stackOutputs.ts `CLI_SETTINGS`) come from the output `Settings`, the functions' own values,
 * over the shell's: the CLI's retry must give what the API's gives (decision 0137). A stack deployed
 * before that output leaves them to the environment, with a warning.
 */
import {
  CloudFormationClient,
  DescribeStacksCommand,
  type DescribeStacksCommandOutput,
} from '@aws-sdk/client-cloudformation';
import { STACK_OUTPUT, type StackOutputName } from '../lib/stackOutputs.js';
import {
  CliError,
  isCredentialsError,
  isNetworkError,
  StackUnreachableError,
  UsageError,
} from './cliErrors.js';
import { type Env, openTarget, type Target, type TargetOptions } from './target.js';

/** The outputs the CLI reads, each with the flag or variable it stands for. */
const OUTPUT_TARGETS = {
  apiUrl: { variable: 'POSTDATE_API_URL' },
  tableName: { option: 'table' },
  sendQueueUrl: { option: 'queueUrl' },
  sendDeadLetterQueueUrl: { option: 'dlqUrl' },
  relayFailureQueueUrl: { option: 'relayFailuresUrl' },
  eventFailureQueueUrl: { option: 'eventFailuresUrl' },
  webhookQueueUrl: { variable: 'POSTDATE_WEBHOOK_QUEUE_URL' },
  eventBusName: { variable: 'POSTDATE_EVENT_BUS_NAME' },
  attachmentBucketName: { variable: 'POSTDATE_ATTACHMENT_BUCKET' },
  scheduleDeadLetterQueueUrl: { option: 'scheduleDlqUrl' },
  scheduleGroupName: { variable: 'POSTDATE_SCHEDULE_GROUP' },
  schedulerRoleArn: { variable: 'POSTDATE_SCHEDULER_ROLE_ARN' },
  relayNames: { variable: 'POSTDATE_RELAY_NAMES' },
} as const satisfies Partial<
  Record<StackOutputName, { readonly option: keyof TargetOptions } | { readonly variable: string }>
>;

/** The stack outputs the CLI reads (test/cdk/stackOutputs.test.ts checks the stack has them). */
export const CLI_STACK_OUTPUTS = Object.keys(OUTPUT_TARGETS) as readonly (keyof typeof OUTPUT_TARGETS)[];

/** A stack as DescribeStacks answers it: its id (an ARN naming the region) and its outputs. */
export interface DescribedStack {
  readonly stackId: string | undefined;
  readonly outputs: Readonly<Record<string, string>>;
}

/**
 * The options and environment that make openTarget talk to the described stack (pure). Flags the
 * operator gave win over the stack's outputs; the outputs win over the environment.
 */
export function targetFromStack(
  stackName: string,
  stack: DescribedStack,
  options: TargetOptions,
  env: Env,
): { readonly options: TargetOptions; readonly env: Env; readonly warnings: readonly string[] } {
  const tableName = stack.outputs[STACK_OUTPUT.tableName];
  if (tableName === undefined || tableName === '') {
    throw new CliError(
      `stack "${stackName}" has no output ${STACK_OUTPUT.tableName}: is it a Postdate stack (lib/PostdateStack.ts)? ` +
        'Pass --table and the queue URLs instead',
    );
  }
  const fromStack: Record<string, string> = {};
  const variables: Record<string, string> = {};
  for (const name of CLI_STACK_OUTPUTS) {
    const value = stack.outputs[STACK_OUTPUT[name]];
    if (value === undefined || value === '') continue;
    const destination: { readonly option: keyof TargetOptions } | { readonly variable: string } =
      OUTPUT_TARGETS[name];
    if ('option' in destination) fromStack[destination.option] = value;
    else variables[destination.variable] = value;
  }
  const given = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
  const region = options.region ?? regionOfStackId(stack.stackId);
  const settingsText = stack.outputs[STACK_OUTPUT.settings];
  const settings =
    settingsText === undefined || settingsText === '' ? undefined : settingsOf(stackName, settingsText);
  const warnings =
    settings === undefined
      ? [
          `stack "${stackName}" has no output ${STACK_OUTPUT.settings} (deployed before it existed): ` +
            "attempts, retention and Message-ID domain come from this shell's environment; redeploy the stack",
        ]
      : [];
  return {
    options: { ...fromStack, ...given, ...(region === undefined ? {} : { region }), stack: undefined },
    env: { ...env, ...variables, ...settings },
    warnings,
  };
}

/** The output `Settings`: a JSON object of variable → value, as the functions have them. */
function settingsOf(stackName: string, text: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const valid =
    typeof parsed === 'object' &&
    parsed !== null &&
    !Array.isArray(parsed) &&
    Object.values(parsed).every((value) => typeof value === 'string');
  if (!valid) {
    throw new CliError(
      `stack "${stackName}": its output ${STACK_OUTPUT.settings} is not a JSON object of settings`,
    );
  }
  return parsed as Record<string, string>;
}

/** `arn:aws:cloudformation:{region}:{account}:stack/{name}/{uuid}` → the region. */
export function regionOfStackId(stackId: string | undefined): string | undefined {
  const region = stackId?.split(':')[3];
  return region === undefined || region === '' ? undefined : region;
}

/** The stack's id and outputs, one DescribeStacks call. */
export async function describeStack(
  client: CloudFormationClient,
  stackName: string,
  region?: string,
): Promise<DescribedStack> {
  let answer: DescribeStacksCommandOutput;
  try {
    answer = await client.send(new DescribeStacksCommand({ StackName: stackName }));
  } catch (error) {
    if (isNetworkError(error)) {
      throw new StackUnreachableError(
        'CloudFormation',
        `region ${region ?? '(the default region)'}`,
        'check the region (--region, AWS_REGION) and the network',
        error,
      );
    }
    // Refused credentials are every command's (exit 3, with the sign-in hint: cli/postdate.ts).
    if (isCredentialsError(error)) throw error;
    // A stack that does not exist, a missing permission: the service's own words.
    const reason = error instanceof Error ? error.message : String(error);
    throw new CliError(`could not read stack "${stackName}": ${reason}`, undefined, { cause: error });
  }
  const stack = answer.Stacks?.[0];
  if (stack === undefined) throw new CliError(`CloudFormation answered no stack "${stackName}"`);
  const outputs: Record<string, string> = {};
  for (const output of stack.Outputs ?? []) {
    if (output.OutputKey !== undefined && output.OutputValue !== undefined) {
      outputs[output.OutputKey] = output.OutputValue;
    }
  }
  return { stackId: stack.StackId, outputs };
}

/**
 * openTarget, after reading the names from the stack when `--stack` is given. `cloudFormation`
 * builds the client (tests hand in one whose HTTP answers are canned).
 */
export async function openTargetWithStack(
  options: TargetOptions,
  env: Env = process.env,
  cloudFormation: (region: string | undefined) => CloudFormationClient = (region) =>
    new CloudFormationClient({ ...(region === undefined ? {} : { region }) }),
): Promise<Target> {
  const stackName = options.stack?.trim();
  if (stackName === undefined) return openTarget(options, env);
  if (stackName === '') throw new UsageError('--stack needs the name of a deployed stack');
  if (options.local) throw new UsageError('--stack and --local name two different stacks: pass one');
  const region = options.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  const client = cloudFormation(region);
  try {
    const stack = await describeStack(client, stackName, region);
    const resolved = targetFromStack(stackName, stack, options, env);
    const relayNames = stack.outputs[STACK_OUTPUT.relayNames];
    return {
      ...openTarget(resolved.options, resolved.env),
      warnings: resolved.warnings,
      // A stack deployed before the output leaves the relays to the shell.
      stackRelayNames: relayNames === undefined || relayNames === '' ? undefined : relayNames,
    };
  } finally {
    client.destroy();
  }
}
