import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { RESOURCE_ENV } from '../../lib/functionEnvironment.js';
import { logicalIdOf, synthesizePostdate } from './support/synthesize.js';

/**
 * `postdate schedule-failures` reads the schedules' dead-letter queue from the stack output
 * ScheduleDeadLetterQueueUrl (docs/operations.md, POSTDATE_SCHEDULE_DLQ_URL). It must be the queue the
 * relay gives every schedule as its DeadLetterConfig (POSTDATE_SCHEDULE_DLQ_ARN), or the CLI would
 * redrive an empty queue while the failures pile up in another.
 */
describe('the schedule DLQ output', () => {
  const { template, stack } = synthesizePostdate();
  const scheduleDlq = logicalIdOf(stack.postdate.scheduleDeadLetterQueue);

  it("is the URL of the schedules' dead-letter queue", () => {
    template.hasOutput('ScheduleDeadLetterQueueUrl', { Value: { Ref: scheduleDlq } });
  });

  it('names the queue the relay gives every schedule as its dead-letter queue', () => {
    const relay = template.findResources('AWS::Lambda::Function', {
      Properties: {
        Environment: {
          Variables: Match.objectLike({
            [RESOURCE_ENV.scheduleDeadLetterArn]: { 'Fn::GetAtt': [scheduleDlq, 'Arn'] },
          }),
        },
      },
    });
    expect(Object.keys(relay)).toEqual([logicalIdOf(stack.postdate.functions.relay)]);
  });
});
