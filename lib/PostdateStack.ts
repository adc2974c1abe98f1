import { Annotations, Stack, type StackProps, Tags } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import { Postdate } from './Postdate.js';
import { type PostdateProps, PostdatePropsError } from './postdateProps.js';

export interface PostdateStackProps extends StackProps {
  /** The construct's props, except those that are resources (given by ARN below). */
  readonly postdate: Omit<
    PostdateProps,
    'smtpSecret' | 'alarmTopic' | 'sesNotificationTopic' | 'sesNotificationTopics' | 'eventBus'
  >;
  /**
   * An existing secret `{username, password}` for the SMTP relay.
   * @default a new secret (set its value after the first deploy, docs/deploy.md)
   */
  readonly smtpSecretArn?: string;
  /**
   * The customer-managed KMS key that encrypts {@link smtpSecretArn}; the sender gets `kms:Decrypt`
   * on it through Secrets Manager.
   * @default the secret uses the AWS-managed key
   */
  readonly smtpSecretKeyArn?: string;
  /**
   * An existing SNS topic for the alarms.
   * @default a new encrypted topic
   */
  readonly alarmTopicArn?: string;
  /**
   * The SNS topic Amazon SES publishes bounces and complaints to: deploys the bounces function
   * (DESIGN §12).
   * @default no SES feedback
   */
  readonly sesNotificationTopicArn?: string;
  /**
   * The SNS topics Amazon SES publishes bounces and complaints to, one for each Region SES sends
   * from (DESIGN §15; SES publishes only within its Region); {@link sesNotificationTopicArn} is a
   * list of one. Give one or the other.
   * @default no SES feedback
   */
  readonly sesNotificationTopicArns?: readonly string[];
  /**
   * An existing EventBridge bus for the events (DESIGN §11).
   * @default a new bus
   */
  readonly eventBusArn?: string;
  /**
   * Subscribes this address to the alarm topic (the subscription must be confirmed by mail).
   * @default no subscription
   */
  readonly alarmEmail?: string;
  /**
   * Props that were filled with placeholders (a bare `cdk synth`); each gets a synth warning.
   * @default none
   */
  readonly placeholders?: readonly string[];
}

/** One deployable Postdate, with the outputs an operator and the CLI need. */
export class PostdateStack extends Stack {
  readonly postdate: Postdate;

  constructor(scope: Construct, id: string, props: PostdateStackProps) {
    super(scope, id, props);
    Tags.of(this).add('app', 'postdate');

    const smtpSecret =
      props.smtpSecretArn === undefined
        ? undefined
        : secretsmanager.Secret.fromSecretAttributes(this, 'SmtpSecret', {
            secretCompleteArn: props.smtpSecretArn,
            encryptionKey:
              props.smtpSecretKeyArn === undefined
                ? undefined
                : kms.Key.fromKeyArn(this, 'SmtpSecretKey', props.smtpSecretKeyArn),
          });
    const alarmTopic =
      props.alarmTopicArn === undefined
        ? undefined
        : sns.Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn);

    if (props.sesNotificationTopicArn !== undefined && props.sesNotificationTopicArns !== undefined) {
      throw new PostdatePropsError([
        'sesNotificationTopicArn and sesNotificationTopicArns were both given: list every topic in sesNotificationTopicArns',
      ]);
    }
    // The first keeps the id the one topic always had, so its subscription is not replaced.
    const sesNotificationTopics = (
      props.sesNotificationTopicArns ??
      (props.sesNotificationTopicArn === undefined ? undefined : [props.sesNotificationTopicArn])
    )?.map((arn, index) =>
      sns.Topic.fromTopicArn(
        this,
        index === 0 ? 'SesNotificationTopic' : `SesNotificationTopic${index + 1}`,
        arn,
      ),
    );
    const eventBus =
      props.eventBusArn === undefined
        ? undefined
        : events.EventBus.fromEventBusArn(this, 'EventBus', props.eventBusArn);

    this.postdate = new Postdate(this, 'Postdate', {
      ...props.postdate,
      smtpSecret,
      alarmTopic,
      sesNotificationTopics,
      eventBus,
    });

    if (props.alarmEmail !== undefined) {
      this.postdate.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    }
    for (const key of props.placeholders ?? []) {
      Annotations.of(this).addWarningV2(
        `postdate:placeholder-${key}`,
        `${key} is a placeholder (example.com): pass -c ${key}=… before deploying (docs/deploy.md)`,
      );
    }

    this.postdate.addStackOutputs();
  }
}
