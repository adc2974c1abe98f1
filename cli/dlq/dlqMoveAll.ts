/**
 * `postdate dlq redrive --all`: every copy from the DLQ to the send queue with SQS's own
 * StartMessageMoveTask, followed until it ends; where the service does not support it (an
 * emulator), every copy is received, resent and deleted instead, and the report says so.
 */
import {
  ListMessageMoveTasksCommand,
  StartMessageMoveTaskCommand,
  UnsupportedOperation,
} from '@aws-sdk/client-sqs';
import { parseDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { defaultSleep } from '../deadLetters/pacer.js';
import { scanDeadLetters } from '../deadLetters/scanDeadLetters.js';
import { counted, type Output } from '../output.js';
import { queueArnOf } from '../target.js';
import { type RedriveDeps, redriveParts, sendDeadLetterQueue } from './dlqDeps.js';

export interface MoveTaskReport {
  readonly mode: 'all';
  readonly dryRun: boolean;
  /** How the move ran: SQS's StartMessageMoveTask, or receive/resend/delete where it is unsupported. */
  readonly method: 'message-move-task' | 'receive-resend-delete';
  readonly status: string;
  readonly toMove: number;
  readonly moved: number;
  readonly failureReason: string | null;
  readonly taskHandle: string | null;
}

export interface MoveAllOptions {
  readonly rate?: number;
  readonly dryRun?: boolean;
  /** Return once the move task has started instead of following it. */
  readonly wait?: boolean;
  /** The fallback: how long copies are hidden while they are moved. @default 300 */
  readonly hideSeconds?: number;
}

export async function redriveAll(
  deps: RedriveDeps,
  options: MoveAllOptions,
  out: Output,
): Promise<MoveTaskReport> {
  const counts = await sendDeadLetterQueue(deps).counts();
  const report = (fields: Pick<MoveTaskReport, 'status' | 'toMove' | 'moved'> & Partial<MoveTaskReport>) => ({
    mode: 'all' as const,
    dryRun: false,
    method: 'message-move-task' as const,
    failureReason: null,
    taskHandle: null,
    ...fields,
  });
  if (options.dryRun) return report({ dryRun: true, status: 'DRY_RUN', toMove: counts.visible, moved: 0 });
  const sourceArn = await queueArnOf(deps.sqs, deps.dlqUrl);
  const destinationArn = await queueArnOf(deps.sqs, deps.sendQueueUrl);
  let taskHandle: string | undefined;
  try {
    const started = await deps.sqs.send(
      new StartMessageMoveTaskCommand({
        SourceArn: sourceArn,
        DestinationArn: destinationArn,
        ...(options.rate !== undefined ? { MaxNumberOfMessagesPerSecond: Math.floor(options.rate) } : {}),
      }),
    );
    taskHandle = started.TaskHandle;
  } catch (error) {
    if (!(error instanceof UnsupportedOperation)) throw error;
    out.warn('StartMessageMoveTask is not supported here: moving every copy by receive/resend/delete');
    return moveEveryCopy(deps, options, counts.visible, out);
  }
  const sleep = deps.sleep ?? defaultSleep;
  for (;;) {
    const { Results } = await deps.sqs.send(
      new ListMessageMoveTasksCommand({ SourceArn: sourceArn, MaxResults: 1 }),
    );
    const task = Results?.[0];
    const status = task?.Status ?? 'UNKNOWN';
    const moved = task?.ApproximateNumberOfMessagesMoved ?? 0;
    const toMove = task?.ApproximateNumberOfMessagesToMove ?? counts.visible;
    out.progress('moved', moved, toMove);
    if (status !== 'RUNNING' || options.wait === false) {
      return report({
        status,
        toMove,
        moved,
        failureReason: task?.FailureReason ?? null,
        taskHandle: taskHandle ?? null,
      });
    }
    await sleep(deps.pollMilliseconds ?? 1000);
  }
}

async function moveEveryCopy(
  deps: RedriveDeps,
  options: MoveAllOptions,
  toMove: number,
  out: Output,
): Promise<MoveTaskReport> {
  const { dlq, sendQueue, pace } = redriveParts(deps, options.rate);
  let moved = 0;
  let left = 0;
  await scanDeadLetters(
    dlq,
    {
      ...(options.hideSeconds !== undefined ? { hideSeconds: options.hideSeconds } : {}),
      maxScan: Number.POSITIVE_INFINITY,
    },
    async (letter) => {
      const parsed = parseDispatchPayload(letter.body);
      if (!parsed.ok) {
        left++;
        return 'keep';
      }
      await pace();
      if ((await dlq.forward(letter, parsed.payload, sendQueue)) === 'refused') {
        left++;
        return 'keep';
      }
      moved++;
      out.progress('moved', moved, toMove);
      return 'done';
    },
  );
  return {
    mode: 'all',
    dryRun: false,
    method: 'receive-resend-delete',
    status: left === 0 ? 'COMPLETED' : 'PARTIAL',
    toMove,
    moved,
    failureReason:
      left === 0
        ? null
        : `${counted(left, 'copy', 'copies')} ${left === 1 ? 'was' : 'were'} unreadable or refused and stay${left === 1 ? 's' : ''}`,
    taskHandle: null,
  };
}
