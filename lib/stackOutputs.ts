import { CONFIG_SETTINGS, type SettingName } from '../lambdas/core/configSpec.js';

/**
 * The outputs of a deployed PostdateStack (lib/PostdateStack.ts), by their CloudFormation output
 * keys. The stack writes them and `postdate --stack NAME` reads them (cli/stackTarget.ts), so an
 * operator never copies a name or an ARN by hand (DESIGN §6); test/cdk/stackOutputs.test.ts checks
 * that the synthesized stack has every one.
 */
export const STACK_OUTPUT = {
  apiUrl: 'ApiUrl',
  tableName: 'TableName',
  sendQueueUrl: 'SendQueueUrl',
  sendDeadLetterQueueUrl: 'SendDeadLetterQueueUrl',
  relayFailureQueueUrl: 'RelayFailureQueueUrl',
  /** The event producer's on-failure destination and what its redrive needs (`postdate event-failures redrive`). */
  eventFailureQueueUrl: 'EventFailureQueueUrl',
  webhookQueueUrl: 'WebhookQueueUrl',
  eventBusName: 'EventBusName',
  attachmentBucketName: 'AttachmentBucketName',
  scheduleDeadLetterQueueUrl: 'ScheduleDeadLetterQueueUrl',
  scheduleGroupName: 'ScheduleGroupName',
  schedulerRoleArn: 'SchedulerRoleArn',
  smtpSecretArn: 'SmtpSecretArn',
  /** The relays' names in order, comma-separated (DESIGN §15; `postdate relays`). */
  relayNames: 'RelayNames',
  alarmTopicArn: 'AlarmTopicArn',
  /**
   * The settings the operator CLI decides with ({@link CLI_SETTINGS}), as a JSON object of the
   * functions' own variables and values: `postdate --stack` uses them instead of the shell's.
   */
  settings: 'Settings',
} as const;

export type StackOutputName = keyof typeof STACK_OUTPUT;

/**
 * The settings (rows of lambdas/core/configSpec.ts) the operator CLI decides with: a retry's attempts
 * (the API's own retry), the retention of a cancel, discard or DLQ drop, the Message-ID `messages show`
 * prints, the sweep grace of `reconcile`, the delays and breaker timing of `relay-failures redrive`
 * (its sweep reads the relays' gates as the sweeper does), a webhook retry's hours, the types
 * `event-failures redrive` puts on the bus. The CLI's configuration is typed as these alone
 * (cli/postdate.ts), so a new one is added here.
 */
export const CLI_SETTINGS = [
  'maxAttempts',
  'retentionDays',
  'messageIdDomain',
  'sweepGraceSeconds',
  'directDelayMaxSeconds',
  'scheduleLeadSeconds',
  'relayProbeSeconds',
  'smtpTimeoutSeconds',
  'webhookRetryHours',
  'busEvents',
] as const satisfies readonly SettingName[];

export type CliSettingName = (typeof CLI_SETTINGS)[number];

/** The {@link CLI_SETTINGS} out of the functions' environment: the value of the output `Settings`. */
export function cliSettingsOf(environment: Readonly<Record<string, string>>): Record<string, string> {
  const settings: Record<string, string> = {};
  for (const name of CLI_SETTINGS) {
    const variable = CONFIG_SETTINGS[name].variable;
    const value = environment[variable];
    if (value !== undefined) settings[variable] = value;
  }
  return settings;
}
