import {
  GetQueueUrlCommand,
  type MessageAttributeValue,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';

/** The queue name and owner account of an SQS queue ARN (`arn:aws:sqs:{region}:{account}:{name}`). */
export function parseQueueArn(arn: string): { queueName: string; accountId: string } {
  const parts = arn.split(':');
  const queueName = parts[5];
  const accountId = parts[4];
  if (parts.length !== 6 || parts[2] !== 'sqs' || !queueName || !accountId) {
    throw new Error(`not an SQS queue ARN: ${arn}`);
  }
  return { queueName, accountId };
}

/** Sends `body` to the queue named by `queueArn`, resolving its URL with GetQueueUrl as Scheduler's SQS target does. */
export async function sendToQueueArn(
  sqs: SQSClient,
  queueArn: string,
  body: string,
  options: { messageGroupId?: string; attributes?: Record<string, string> } = {},
): Promise<void> {
  const { queueName } = parseQueueArn(queueArn);
  const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: queueName }));
  if (!QueueUrl) throw new Error(`queue ${queueName} has no URL`);
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const [key, value] of Object.entries(options.attributes ?? {})) {
    attributes[key] = { DataType: 'String', StringValue: value };
  }
  await sqs.send(
    new SendMessageCommand({
      QueueUrl,
      MessageBody: body,
      ...(options.messageGroupId ? { MessageGroupId: options.messageGroupId } : {}),
      ...(Object.keys(attributes).length > 0 ? { MessageAttributes: attributes } : {}),
    }),
  );
}
