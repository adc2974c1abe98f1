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
} as const;

export type StackOutputName = keyof typeof STACK_OUTPUT;
