import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { Postdate } from '../../lib/Postdate.js';
import { type PostdateProps, PostdatePropsError, resolvePostdateProps } from '../../lib/postdateProps.js';
import { logicalIdOf, statementsOfRole, testApp } from './support/synthesize.js';

/**
 * The construct prop `relays` (DESIGN §15): the functions get POSTDATE_RELAYS naming each relay's
 * secret, the sender may read exactly those secrets, and a bad list is refused with every problem
 * at once, each naming the relay and the field.
 */
const ACCOUNT = { account: '123456789012', region: 'eu-west-1' } as const;
const BASE: PostdateProps = { defaultFrom: 'noreply@example.com', allowedFrom: ['*@example.com'] };
const arn = (name: string) => `arn:aws:secretsmanager:eu-west-1:123456789012:secret:${name}-AbCdEf`;

function problemsOf(props: PostdateProps): readonly string[] {
  try {
    resolvePostdateProps(props);
  } catch (error) {
    if (error instanceof PostdatePropsError) return error.problems;
    throw error;
  }
  return [];
}

describe('the construct prop relays', () => {
  const stack = new Stack(testApp(), 'Relays', { env: ACCOUNT });
  const primarySecret = secretsmanager.Secret.fromSecretAttributes(stack, 'Primary', {
    secretCompleteArn: arn('primary'),
    encryptionKey: kms.Key.fromKeyArn(stack, 'PrimaryKey', 'arn:aws:kms:eu-west-1:123456789012:key/k-1'),
  });
  const backupSecret = new secretsmanager.Secret(stack, 'Backup');
  const postdate = new Postdate(stack, 'Mail', {
    ...BASE,
    relays: [
      { name: 'ses-eu', host: 'email-smtp.eu-west-1.amazonaws.com', secret: primarySecret, maxSendRate: 14 },
      { name: 'backup', host: 'smtp.backup.example', port: 465, secure: true, secret: backupSecret },
    ],
  });
  const template = Template.fromStack(stack);
  const sender = template.toJSON().Resources[logicalIdOf(postdate.functions.sender)];
  const variables = sender.Properties.Environment.Variables as Record<string, unknown>;

  it('gives the functions POSTDATE_RELAYS in order, each entry naming its secret, and the functions start with it', () => {
    const text = stack.resolve(variables.POSTDATE_RELAYS) as string | { 'Fn::Join': [string, unknown[]] };
    const joined =
      typeof text === 'string'
        ? text
        : text['Fn::Join'][1]
            .map((part) => (typeof part === 'string' ? part : 'arn-of-the-new-secret'))
            .join('');
    expect(JSON.parse(joined)).toEqual([
      {
        name: 'ses-eu',
        host: 'email-smtp.eu-west-1.amazonaws.com',
        port: 587,
        secure: false,
        require_tls: true,
        secret_arn: arn('primary'),
        max_send_rate: 14,
      },
      {
        name: 'backup',
        host: 'smtp.backup.example',
        port: 465,
        secure: true,
        require_tls: true,
        secret_arn: 'arn-of-the-new-secret',
      },
    ]);
    const literal = Object.fromEntries(
      Object.entries(variables).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
    );
    // SMTP_HOST is the region's SES endpoint, a token here: any host stands for it.
    const config = loadConfig({ SMTP_HOST: 'smtp.example', ...literal, POSTDATE_RELAYS: joined }, 'aws');
    expect(config.relays.map((relay) => [relay.name, relay.secretArn, relay.maxSendRate])).toEqual([
      ['ses-eu', arn('primary'), 14],
      ['backup', 'arn-of-the-new-secret', undefined],
    ]);
    expect(postdate.relayNames).toEqual(['ses-eu', 'backup']);
    // Without `smtpSecret`, the first relay's secret is the stack's: no placeholder secret is made.
    expect(postdate.smtpSecret).toBe(primarySecret);
    template.resourceCountIs('AWS::SecretsManager::Secret', 1);
  });

  it("lets the sender read every relay's secret (and decrypt an imported key through Secrets Manager), nothing more", () => {
    const statements = statementsOfRole(
      template,
      logicalIdOf(postdate.functions.sender.role ?? postdate.functions.sender),
    );
    const read = statements.filter((statement) => statement.Action.includes('secretsmanager:GetSecretValue'));
    expect(read).toHaveLength(1);
    expect(read[0]?.Action).toEqual(['secretsmanager:GetSecretValue']);
    expect(read[0]?.Resource).toEqual([arn('primary'), { Ref: logicalIdOf(backupSecret) }]);
    const decrypt = statements.filter((statement) => statement.Action.includes('kms:Decrypt'));
    expect(decrypt.map((statement) => statement.Resource)).toEqual([
      ['arn:aws:kms:eu-west-1:123456789012:key/k-1'],
    ]);
  });

  it('refuses a bad list with every problem at once, naming the relay and the field', () => {
    const secret = secretsmanager.Secret.fromSecretCompleteArn(new Stack(), 'S', arn('x'));
    const problems = problemsOf({
      ...BASE,
      smtpHost: 'smtp.example.net',
      relays: [
        { name: 'bad name', host: 'ok.example', secret },
        { name: 'twice', host: 'not a host', secret, port: 0 },
        { name: 'twice', host: 'ok.example', secret, maxSendRate: 0 },
      ],
    });
    expect(problems).toEqual([
      'smtpHost has no effect with relays: describe that relay as an entry of relays',
      'relays[0] "bad name": name must be 1 to 32 letters, digits, "-" or "_"',
      'relays[1] "twice": host must be a host name or an IP address, got "not a host"',
      'relays[1] "twice": port must be a whole number from 1 to 65535, got 0',
      'relays[2] "twice": name is used twice',
      'relays[2] "twice": maxSendRate must be a positive number of recipients per second, got 0',
    ]);
    expect(problemsOf({ ...BASE, relays: [] })).toEqual([
      'relays must list at least one relay (or be left out)',
    ]);
  });
});
