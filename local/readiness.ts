import { connect } from 'node:net';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { GetScheduleGroupCommand } from '@aws-sdk/client-scheduler';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { PartState, Readiness } from './http/httpFrontEnd.js';
import { FUNCTIONS, type FunctionName } from './localFunctions.js';
import { LOCAL_RESOURCES, type LocalClients } from './localResources.js';

/**
 * What `GET /health` reports: each emulator probed now (one second each), the SMTP sink and the
 * viewer (`external` when SMTP goes to a real relay), the event sources and every function.
 */
export function stackReadiness(options: {
  readonly clients: LocalClients;
  readonly sendQueueUrl: string;
  readonly host: string;
  /** The sink's port; undefined when SMTP goes to a real relay. */
  readonly smtpPort: number | undefined;
  readonly mailViewerUrl: string | undefined;
  readonly relayEventSource: PartState;
  readonly senderEventSource: PartState;
  readonly built: Readonly<Record<FunctionName, boolean>>;
}): () => Promise<Readiness> {
  const { clients, smtpPort, mailViewerUrl } = options;
  return async () => {
    const [dynamodb, sqs, scheduler, smtp, mailViewer] = await Promise.all([
      probe(() =>
        clients.dynamodb.send(new DescribeTableCommand({ TableName: LOCAL_RESOURCES.tableName }), timeout()),
      ),
      probe(() =>
        clients.sqs.send(
          new GetQueueAttributesCommand({ QueueUrl: options.sendQueueUrl, AttributeNames: ['QueueArn'] }),
          timeout(),
        ),
      ),
      probe(() =>
        clients.scheduler.send(
          new GetScheduleGroupCommand({ Name: LOCAL_RESOURCES.scheduleGroup }),
          timeout(),
        ),
      ),
      smtpPort !== undefined
        ? probe(() => smtpGreets(options.host, smtpPort))
        : Promise.resolve<PartState>('external'),
      mailViewerUrl ? probe(() => fetchAnswers(mailViewerUrl)) : Promise.resolve<PartState>('external'),
    ]);
    const parts: Record<string, PartState> = {
      dynamodb,
      sqs,
      scheduler,
      smtp,
      mailViewer,
      relayEventSource: options.relayEventSource,
      senderEventSource: options.senderEventSource,
    };
    for (const name of FUNCTIONS) {
      parts[`${name}Function`] = options.built[name] ? 'up' : 'not built';
    }
    return { ready: Object.values(parts).every((state) => state !== 'down'), parts };
  };
}

const timeout = () => ({ abortSignal: AbortSignal.timeout(1000) });

async function probe(check: () => Promise<unknown>): Promise<PartState> {
  try {
    await check();
    return 'up';
  } catch {
    return 'down';
  }
}

/** Connects and waits for the 220 greeting, then says QUIT. */
function smtpGreets(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    socket.setTimeout(1000, () => socket.destroy(new Error('SMTP greeting timed out')));
    socket.once('data', (chunk: Buffer) => {
      const greeted = chunk.toString().startsWith('220');
      socket.end('QUIT\r\n');
      if (greeted) resolve();
      else reject(new Error('no 220 greeting'));
    });
    socket.once('error', reject);
  });
}

/** Any HTTP answer means the server is up (the probe does not make it render anything). */
async function fetchAnswers(url: string): Promise<void> {
  const response = await fetch(url, { method: 'HEAD', signal: AbortSignal.timeout(1000) });
  await response.arrayBuffer();
}
