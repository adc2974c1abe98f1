import { CfnResource, Duration, RemovalPolicy, Stack, Token } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { PLACEHOLDER_SENDER, settingsFromContext } from '../../lib/contextProps.js';
import { propsEnvironment } from '../../lib/functionEnvironment.js';
import * as entry from '../../lib/Postdate.js';
import { Postdate, type SenderPollers } from '../../lib/Postdate.js';
import {
  POSTDATE_DEFAULTS,
  type PostdateProps,
  PostdatePropsError,
  resolvePostdateProps,
} from '../../lib/postdateProps.js';
import { QUEUE } from '../../lib/queueLayout.js';
import { testApp } from './support/synthesize.js';

const VALID: PostdateProps = { defaultFrom: 'noreply@example.com', allowedFrom: ['*@example.com'] };

function problemsOf(props: PostdateProps): readonly string[] {
  try {
    resolvePostdateProps(props);
  } catch (error) {
    if (error instanceof PostdatePropsError) return error.problems;
    throw error;
  }
  return [];
}

/** Every pattern matches one of the problems, and there are no others. */
function expectExactly(problems: readonly string[], expected: readonly RegExp[]): void {
  for (const pattern of expected) {
    expect(
      problems.some((problem) => pattern.test(problem)),
      `${pattern} in ${problems.join('\n')}`,
    ).toBe(true);
  }
  expect(problems).toHaveLength(expected.length);
}

describe('Postdate props', () => {
  it('apply the DESIGN §8 defaults, and derive the Message-ID domain from defaultFrom', () => {
    const resolved = resolvePostdateProps({
      ...VALID,
      defaultFrom: 'Ops <ops@mail.example.com>',
      allowedFrom: ['*@mail.example.com'],
    });
    expect(resolved).toMatchObject({
      maxAttempts: 8,
      retryBaseSeconds: 30,
      retryCapSeconds: 3600,
      leaseSeconds: 300,
      senderTimeoutSeconds: 240,
      smtpTimeoutSeconds: 20,
      smtpReplyTimeoutSeconds: 120,
      directDelayMaxSeconds: 900,
      scheduleLeadSeconds: 90,
      sweepGraceSeconds: 300,
      maxHorizonDays: 400,
      retentionDays: 30,
      maxSendRate: undefined,
      smtpPort: 587,
      smtpRequireTls: true,
      senderMaxConcurrency: POSTDATE_DEFAULTS.senderMaxConcurrency,
      messageIdDomain: 'mail.example.com',
    });
    expect(resolved.sweepInterval.toMinutes()).toBe(5);
    expect(resolvePostdateProps({ ...VALID, smtpSecure: true }).smtpPort).toBe(465);
  });

  it('report every problem at once, each naming its prop', () => {
    const problems = problemsOf({
      defaultFrom: 'someone@elsewhere.org',
      allowedFrom: ['*@example.com', 'not a sender'],
      maxAttempts: 0,
      retryBaseSeconds: 600,
      retryCapSeconds: 60,
      leaseSeconds: 30,
      scheduleLeadSeconds: 300,
      directDelayMaxSeconds: 120,
      senderMaxConcurrency: 1,
      maxSendRate: -2,
      smtpPort: 70_000,
      messageIdDomain: 'no spaces.example',
      sweepInterval: Duration.seconds(30),
      authorizerCacheTtl: Duration.hours(2),
      oldestMessageAgeAlarmThreshold: Duration.minutes(10),
    });
    const expected = [
      /^allowedFrom: "not a sender"/,
      /^defaultFrom "someone@elsewhere.org" is not matched by allowedFrom/,
      /^maxAttempts must be a whole number from 1 to 1000, got 0/,
      /^retryCapSeconds \(60\) must be at least retryBaseSeconds \(600\)/,
      /^the lease \(30 s\) must exceed the sender timeout \(240 s\)/,
      /^scheduleLeadSeconds \(300\) must not exceed directDelayMaxSeconds \(120\)/,
      /^senderMaxConcurrency must be a whole number from 2 to 1000, got 1/,
      /^maxSendRate must be a positive number/,
      /^smtpPort must be a whole number from 1 to 65535/,
      /^messageIdDomain must be a domain name/,
      /^sweepInterval must be at least 120 s/,
      /^authorizerCacheTtl must be at most one hour/,
      /^oldestMessageAgeAlarmThreshold must exceed 900 s/,
    ];
    expectExactly(problems, expected);
  });

  it('report a Duration of a part a unit cannot take with the rest, naming its prop, not as CDK stopping at it', () => {
    const problems = problemsOf({
      ...VALID,
      maxAttempts: 0,
      sweepInterval: Duration.seconds(150),
      authorizerCacheTtl: Duration.millis(500),
      oldestMessageAgeAlarmThreshold: Duration.millis(1_800_500),
    });
    const expected = [
      /^maxAttempts must be a whole number/,
      /^sweepInterval must be a whole number of minutes \(an EventBridge rate\), got 2 minutes 30 seconds/,
      /^authorizerCacheTtl must be a whole number of seconds, got 500 millis/,
      /^oldestMessageAgeAlarmThreshold must be a whole number of seconds, got 30 minutes 500 millis/,
    ];
    expectExactly(problems, expected);
    // Its own unit for the iterator-age alarm is milliseconds: 1.5 s is a threshold it can take.
    expect(problemsOf({ ...VALID, relayIteratorAgeAlarmThreshold: Duration.millis(1_500) })).toEqual([]);
  });

  it('refuse a removalPolicy CloudFormation refuses for the table, the secret and the bucket (SNAPSHOT), with the rest', () => {
    // CloudFormation takes Snapshot for none of the three: the deploy, not the synth, would fail.
    expect(problemsOf({ ...VALID, removalPolicy: RemovalPolicy.SNAPSHOT, maxAttempts: 0 })).toEqual([
      expect.stringMatching(/^maxAttempts must be a whole number/),
      "removalPolicy must be RETAIN, RETAIN_ON_UPDATE_OR_DELETE or DESTROY (the table, the SMTP secret and the attachments' bucket take no snapshot), got snapshot",
    ]);
    for (const removalPolicy of [
      RemovalPolicy.RETAIN,
      RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
      RemovalPolicy.DESTROY,
    ]) {
      expect(problemsOf({ ...VALID, removalPolicy }), removalPolicy).toEqual([]);
    }
  });

  it('keep the worst-case retrying time (attempts × backoff) inside the send queue retention', () => {
    // 100 attempts at a 12 h cap: about 49 days of backoff against 4 days of retention.
    const problems = problemsOf({
      ...VALID,
      maxAttempts: 100,
      retryBaseSeconds: 60,
      retryCapSeconds: 43_200,
    });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/maxAttempts \(100\).*retryBaseSeconds \(60\).*retryCapSeconds \(43200\)/);
    expect(problems[0]).toMatch(new RegExp(`send queue retention \\(${QUEUE.send.retentionDays} days`));
    // The defaults and the test stack's props are far inside it.
    expect(problemsOf(VALID)).toEqual([]);
    expect(problemsOf({ ...VALID, maxAttempts: 8, retryBaseSeconds: 1, retryCapSeconds: 43_200 })).toEqual(
      [],
    );
  });

  it('accept a defaultFrom with a display name and exact or wildcard senders', () => {
    expect(problemsOf({ defaultFrom: 'Ops <ops@example.com>', allowedFrom: ['ops@example.com'] })).toEqual(
      [],
    );
    expect(problemsOf({ defaultFrom: 'ops@example.com', allowedFrom: ['*'] })).toEqual([]);
    expect(problemsOf({ defaultFrom: 'ops', allowedFrom: ['*'] })).toEqual([
      expect.stringMatching(/^defaultFrom must be an address/),
      'messageIdDomain could not be derived from defaultFrom; set it explicitly',
    ]);
  });

  it('hold lease > sender timeout > one whole attempt (2 × SMTP timeout + reply timeout + 28 s for the outcome write)', () => {
    expect(problemsOf({ ...VALID, senderTimeoutSeconds: 188, leaseSeconds: 200 })).toEqual([
      expect.stringMatching(/^the sender timeout \(188 s\) must exceed one whole attempt: .* = 188 s$/),
    ]);
    expect(problemsOf({ ...VALID, senderTimeoutSeconds: 189, leaseSeconds: 200 })).toEqual([]);
    expect(problemsOf({ ...VALID, smtpReplyTimeoutSeconds: 600 })).toEqual([
      expect.stringMatching(/^the sender timeout \(240 s\) must exceed one whole attempt/),
    ]);
    expect(
      problemsOf({ ...VALID, smtpReplyTimeoutSeconds: 600, senderTimeoutSeconds: 900, leaseSeconds: 900 }),
    ).toEqual([expect.stringMatching(/^the lease \(900 s\) must exceed the sender timeout \(900 s\)/)]);
  });

  it('give the sender function the timeout and the send queue six times it as visibility', () => {
    const stack = new Stack(testApp(), 'Timing');
    new Postdate(stack, 'Postdate', { ...VALID, senderTimeoutSeconds: 300, leaseSeconds: 400 });
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Timeout: 300,
      Environment: {
        Variables: Match.objectLike({
          POSTDATE_SENDER_TIMEOUT_SECONDS: '300',
          POSTDATE_LEASE_SECONDS: '400',
        }),
      },
    });
    template.hasResourceProperties('AWS::SQS::Queue', { VisibilityTimeout: 1800 });
  });

  it('check a value by the rule the functions start with: the construct refuses exactly what they refuse (DESIGN §8)', () => {
    const environment = {
      POSTDATE_DEFAULT_FROM: VALID.defaultFrom,
      POSTDATE_ALLOWED_FROM: VALID.allowedFrom.join(','),
      SMTP_HOST: 'smtp.example.com',
    };
    const cases: [Partial<PostdateProps>, string, string][] = [
      [
        { defaultFrom: 'Ops, Team <noreply@example.com>' },
        'POSTDATE_DEFAULT_FROM',
        'Ops, Team <noreply@example.com>',
      ],
      [
        { defaultFrom: '"Ops, Team" <noreply@example.com>' },
        'POSTDATE_DEFAULT_FROM',
        '"Ops, Team" <noreply@example.com>',
      ],
      [{ messageIdDomain: 'mail' }, 'POSTDATE_MESSAGE_ID_DOMAIN', 'mail'],
      [{ messageIdDomain: '-mail.example.com' }, 'POSTDATE_MESSAGE_ID_DOMAIN', '-mail.example.com'],
      [
        { allowedFrom: ['<ops@example.com>', '*@example.com'] },
        'POSTDATE_ALLOWED_FROM',
        '<ops@example.com>,*@example.com',
      ],
      [{ smtpHost: 'smtp example.com' }, 'SMTP_HOST', 'smtp example.com'],
      [{ smtpHost: 'smtp-1.example.com' }, 'SMTP_HOST', 'smtp-1.example.com'],
    ];
    const disagreements = cases.flatMap(([props, variable, value]) => {
      const constructRefuses = problemsOf({ ...VALID, ...props }).length > 0;
      let functionsRefuse = false;
      try {
        loadConfig({ ...environment, [variable]: value }, 'aws');
      } catch {
        functionsRefuse = true;
      }
      return constructRefuses === functionsRefuse
        ? []
        : [`${variable}=${value}: the construct ${constructRefuses ? 'refuses' : 'accepts'} it`];
    });
    expect(disagreements).toEqual([]);
    // The API refuses a `from` whose display name holds a comma unquoted (DESIGN §3): as the default, it
    // would refuse every request that gives none.
    expect(problemsOf({ ...VALID, defaultFrom: 'Ops, Team <noreply@example.com>' })).toEqual([
      expect.stringMatching(/^defaultFrom must be an address .*display name/),
      'messageIdDomain could not be derived from defaultFrom; set it explicitly',
    ]);
  });

  it('leave a deploy-time defaultFrom to the functions to check at cold start', () => {
    const stack = new Stack(testApp(), 'TokenSender');
    const defaultFrom = Token.asString({ Ref: 'DefaultFromParameter' });
    expect(
      () => new Postdate(stack, 'Postdate', { ...VALID, defaultFrom, messageIdDomain: 'example.com' }),
    ).not.toThrow();
  });

  it('pass deploy-time tokens through unchecked', () => {
    const stack = new Stack();
    const port = Token.asNumber({ Ref: 'SmtpPortParameter' });
    const host = Token.asString({ Ref: 'SmtpHostParameter' });
    expect(problemsOf({ ...VALID, smtpPort: port, smtpHost: host })).toEqual([]);
    expect(stack.resolve(resolvePostdateProps({ ...VALID, smtpPort: port }).smtpPort)).toEqual({
      Ref: 'SmtpPortParameter',
    });
  });

  it('make the construct throw before it creates anything', () => {
    const stack = new Stack(testApp(), 'Invalid');
    expect(() => new Postdate(stack, 'Postdate', { ...VALID, maxAttempts: 0, leaseSeconds: 10 })).toThrow(
      PostdatePropsError,
    );
    expect(stack.node.findAll().filter((construct) => construct instanceof CfnResource)).toEqual([]);
  });

  it('can be typed and caught from the package entry (`postdate`): SenderPollers, PostdatePropsError', () => {
    const senderPollers: SenderPollers = { minimum: 2, maximum: 4 };
    const stack = new Stack(testApp(), 'FromTheEntry');
    const error = (() => {
      try {
        new Postdate(stack, 'Postdate', { ...VALID, senderPollers, maxAttempts: 0 });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(entry.PostdatePropsError);
  });

  it('become an environment that lambdas/core/config.ts reads back to the same values', () => {
    const resolved = resolvePostdateProps({
      ...VALID,
      allowedFrom: ['*@example.com', 'ops@example.org'],
      maxAttempts: 4,
      maxSendRate: 2.5,
      smtpRequireTls: false,
    });
    const config = loadConfig(propsEnvironment(resolved, 'smtp.example.net', 'PostdateUnderTest'), 'aws');
    expect(config).toMatchObject({
      target: 'aws',
      smtp: { host: 'smtp.example.net', port: 587, secure: false, requireTls: false },
      defaultFrom: 'noreply@example.com',
      allowedFrom: ['*@example.com', 'ops@example.org'],
      messageIdDomain: 'example.com',
      maxAttempts: 4,
      retryBaseSeconds: 30,
      retryCapSeconds: 3600,
      leaseSeconds: 300,
      senderTimeoutSeconds: 240,
      smtpTimeoutSeconds: 20,
      smtpReplyTimeoutSeconds: 120,
      directDelayMaxSeconds: 900,
      scheduleLeadSeconds: 90,
      sweepGraceSeconds: 300,
      maxSendRate: 2.5,
      maxHorizonDays: 400,
      retentionDays: 30,
    });
  });
});

describe('settings from CDK context', () => {
  const from = (context: Record<string, unknown>) => settingsFromContext((key) => context[key]);

  it('let a bare synth work with example.com placeholders, and list them for a warning', () => {
    const settings = from({});
    expect(settings.stackName).toBe('Postdate');
    expect(settings.stackProps.postdate.defaultFrom).toBe(PLACEHOLDER_SENDER.defaultFrom);
    expect(settings.stackProps.postdate.allowedFrom).toEqual([PLACEHOLDER_SENDER.allowedFrom]);
    expect(settings.stackProps.placeholders).toEqual(['defaultFrom', 'allowedFrom']);
  });

  it('read -c strings and cdk.json values alike', () => {
    const settings = from({
      stackName: 'Mail',
      defaultFrom: 'noreply@example.org',
      allowedFrom: 'noreply@example.org, *@mail.example.org',
      maxAttempts: '5',
      retentionDays: 14,
      smtpSecure: 'true',
      apiRateLimit: '2000',
      sweepIntervalMinutes: 10,
      removalPolicy: 'destroy',
      alarmEmail: 'oncall@example.org',
    });
    expect(settings.stackName).toBe('Mail');
    expect(settings.stackProps.placeholders).toEqual([]);
    expect(settings.stackProps.alarmEmail).toBe('oncall@example.org');
    const props = resolvePostdateProps(settings.stackProps.postdate);
    expect(props).toMatchObject({
      allowedFrom: ['noreply@example.org', '*@mail.example.org'],
      maxAttempts: 5,
      retentionDays: 14,
      smtpSecure: true,
      smtpPort: 465,
      apiThrottle: { rateLimit: 2000, burstLimit: 2000 },
      removalPolicy: 'destroy',
    });
    expect(props.sweepInterval.toMinutes()).toBe(10);
  });

  it("take the SMTP secret by its complete ARN (with Secrets Manager's suffix), and its KMS key", () => {
    const complete = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:team/smtp-AbCdEf';
    const key = 'arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555';
    const settings = from({ smtpSecretArn: complete, smtpSecretKeyArn: key });
    expect(settings.stackProps).toMatchObject({ smtpSecretArn: complete, smtpSecretKeyArn: key });
    expect(() =>
      from({ smtpSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:team/smtp' }),
    ).toThrow(
      expect.objectContaining({
        problems: [expect.stringMatching(/^context smtpSecretArn must be the secret's complete ARN/)],
      }),
    );
    expect(() => from({ smtpSecretKeyArn: key })).toThrow(
      expect.objectContaining({ problems: ['context smtpSecretKeyArn needs smtpSecretArn'] }),
    );
    // A key id or an alias is no key the grant can name: the sender could not decrypt the secret.
    expect(() => from({ smtpSecretArn: complete, smtpSecretKeyArn: 'alias/smtp' })).toThrow(
      expect.objectContaining({
        problems: ['context smtpSecretKeyArn must be an ARN of kms (arn:…:kms:…), got "alias/smtp"'],
      }),
    );
  });

  it('refuse an alarmEmail SNS would refuse at deploy: one bare address', () => {
    for (const alarmEmail of ['oncall', 'Ops <ops@example.com>', 'a@example.com,b@example.com']) {
      expect(() => from({ alarmEmail }), alarmEmail).toThrow(
        expect.objectContaining({
          problems: [expect.stringMatching(/^context alarmEmail must be one email address/)],
        }),
      );
    }
    expect(from({ alarmEmail: ' oncall@example.com ' }).stackProps.alarmEmail).toBe('oncall@example.com');
  });

  it('take the alarm topic by an SNS ARN, as the SES topics and the bus by theirs', () => {
    for (const alarmTopicArn of ['ops-alarms', 'arn:aws:sqs:eu-west-1:123456789012:ops-alarms']) {
      expect(() => from({ alarmTopicArn }), alarmTopicArn).toThrow(
        expect.objectContaining({
          problems: [`context alarmTopicArn must be an ARN of sns (arn:…:sns:…), got "${alarmTopicArn}"`],
        }),
      );
    }
    const arn = 'arn:aws:sns:eu-west-1:123456789012:ops-alarms';
    expect(from({ alarmTopicArn: arn }).stackProps.alarmTopicArn).toBe(arn);
  });

  it('refuse a context key that looks like a setting and is none (a typo would deploy the default)', () => {
    const context: Record<string, unknown> = { maxAtempts: '5', maxAttempts: '6' };
    const cdkOwn = [
      '@aws-cdk/core:newStyleStackSynthesis',
      'aws:cdk:bundling-stacks',
      'acknowledged-issue-numbers',
    ];
    expect(() => settingsFromContext((key) => context[key], [...Object.keys(context), ...cdkOwn])).toThrow(
      expect.objectContaining({
        problems: [
          'context maxAtempts is no Postdate setting (docs/deploy.md, "Settings", lists them; docs/configuration.md the props)',
        ],
      }),
    );
    expect(
      settingsFromContext((key) => context[key], ['maxAttempts', ...cdkOwn]).stackProps.postdate,
    ).toMatchObject({ maxAttempts: 6 });
  });

  it('collect malformed values and throw them together', () => {
    expect(() => from({ maxAttempts: 'eight', smtpSecure: 'yes', removalPolicy: 'keep' })).toThrow(
      expect.objectContaining({
        problems: expect.arrayContaining([
          'context maxAttempts must be a number, got "eight"',
          'context smtpSecure must be true or false, got "yes"',
          'context removalPolicy must be "retain" or "destroy", got "keep"',
        ]),
      }),
    );
  });
});
