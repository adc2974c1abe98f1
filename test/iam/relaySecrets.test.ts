import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import { describe, expect, it } from 'vitest';
import { loadConfig, loadResourceNames } from '../../lambdas/core/config.js';
import { POSTDATE_FUNCTIONS, type PostdateFunctionName } from '../../lambdas/core/postdateFunctions.js';
import { relaySecretArn } from '../../lambdas/core/relays.js';
import { Postdate } from '../../lib/Postdate.js';
import { logicalIdOf, synthesizePostdate, TEST_PROPS, testApp } from '../cdk/support/synthesize.js';
import {
  arnOf,
  roleStatements,
  type SimulatedRequest,
  simulate,
  TEST_ACCOUNT,
  TEST_REGION,
  templateResolver,
} from './templatePolicies.js';

/**
 * DESIGN §6 "Permissions are part of the contract", §15 "each relay its own secret". The one AWS
 * request the functions make in AWS only is the sender's read of a relay's login (locally it reads
 * the relay's user and pass), so no recorded scenario (permissions.test.ts) makes it. Here it is
 * built from what a deployed sender reads — the synthesized sender's environment, resolved, loaded
 * as the sender loads it (core/config.ts) and each relay's secret found as the sender finds it
 * (core/relays.ts `relaySecretArn`, sender/senderDependencies.ts) — and evaluated against the
 * synthesized roles: with the one default relay and with two relays. The sender may read each
 * relay's secret (and decrypt it through Secrets Manager when it has its own key) and no other
 * secret; no other function reads a secret (the sweeper only re-arms a probe token: the sender
 * probes; the CLI runs as the operator, with no role of the stack), so none may read one.
 */

const SES_TOPIC_ARN = `arn:aws:sns:${TEST_REGION}:${TEST_ACCOUNT}:ses-feedback`;
const SECRETS_MANAGER = `secretsmanager.${TEST_REGION}.amazonaws.com`;
/** A key's default policy (AWS's, for a key made without one): IAM policies of the account decide. */
const DEFAULT_KEY_POLICY = {
  Version: '2012-10-17',
  Statement: [
    {
      Sid: 'Enable IAM User Permissions',
      Effect: 'Allow',
      Principal: { AWS: `arn:aws:iam::${TEST_ACCOUNT}:root` },
      Action: 'kms:*',
      Resource: '*',
    },
  ],
};

interface Deployment {
  readonly template: Template;
  readonly postdate: Postdate;
  /** Each relay in order with the secret (and key) the construct was given for it. */
  readonly relays: readonly { readonly name: string; readonly secret: string; readonly key?: string }[];
}

/** The stack as bin/ deploys it: the one relay `SMTP_*` describes, its secret made by the stack. */
function oneRelay(): Deployment {
  const { template, stack } = synthesizePostdate({ ...TEST_PROPS, sesNotificationTopicArn: SES_TOPIC_ARN });
  const { resolve } = templateResolver(template, {});
  const secret = String(resolve(stack.resolve(stack.postdate.smtpSecret.secretArn)));
  return { template, postdate: stack.postdate, relays: [{ name: 'default', secret }] };
}

/**
 * Failover (DESIGN §15) as a stack that embeds the construct declares it: the first relay's secret
 * imported by its complete ARN with its own key, the second's made in the stack.
 */
function twoRelays(): Deployment {
  const stack = new Stack(testApp(), 'RelaysUnderTest');
  const primarySecret = arnOf.secret('ses-us-login-AbCdEf');
  const primaryKey = `arn:aws:kms:${TEST_REGION}:${TEST_ACCOUNT}:key/ses-us-login`;
  const primary = secretsmanager.Secret.fromSecretAttributes(stack, 'PrimaryLogin', {
    secretCompleteArn: primarySecret,
    encryptionKey: kms.Key.fromKeyArn(stack, 'PrimaryLoginKey', primaryKey),
  });
  const backup = new secretsmanager.Secret(stack, 'BackupLogin');
  const { smtpHost: _oneRelayOnly, ...props } = TEST_PROPS.postdate;
  const postdate = new Postdate(stack, 'Postdate', {
    ...props,
    sesNotificationTopics: [sns.Topic.fromTopicArn(stack, 'SesFeedback', SES_TOPIC_ARN)],
    relays: [
      { name: 'ses-us', host: `email-smtp.${TEST_REGION}.amazonaws.com`, secret: primary, maxSendRate: 14 },
      { name: 'backup', host: 'smtp.backup.example', port: 465, secure: true, secret: backup },
    ],
  });
  const template = Template.fromStack(stack);
  const { resolve } = templateResolver(template, {});
  return {
    template,
    postdate,
    relays: [
      { name: 'ses-us', secret: primarySecret, key: primaryKey },
      { name: 'backup', secret: String(resolve(stack.resolve(backup.secretArn))) },
    ],
  };
}

describe.each([
  ['one relay', oneRelay],
  ['two relays', twoRelays],
])("the sender's relay logins, %s", (_label, deploy) => {
  const { template, postdate, relays } = deploy();
  const { resolve } = templateResolver(template, {});
  const roleOf = (name: PostdateFunctionName): string => {
    const fn = name === 'bounces' ? postdate.bounces : postdate.functions[name];
    if (fn === undefined) throw new Error(`no ${name} function in the stack`);
    return template.toJSON().Resources[logicalIdOf(fn)].Properties.Role['Fn::GetAtt'][0];
  };
  const sender = roleOf('sender');

  /** What the deployed sender reads: one GetSecretValue per relay, of the secret its environment names. */
  const reads = (() => {
    const resource = template.toJSON().Resources[logicalIdOf(postdate.functions.sender)];
    const env = resolve(resource.Properties.Environment.Variables) as Record<string, string>;
    const smtpSecretArn = loadResourceNames(env).smtpSecretArn;
    return loadConfig(env, 'aws').relays.map((relay) => ({
      relay: relay.name,
      secret: relaySecretArn(relay, smtpSecretArn),
    }));
  })();
  const getSecret = (secret: string): SimulatedRequest => ({
    action: 'secretsmanager:GetSecretValue',
    resource: secret,
    context: {},
  });

  it('reads, for each relay in order, the secret the construct was given for it', () => {
    expect(reads).toEqual(relays.map((relay) => ({ relay: relay.name, secret: relay.secret })));
  });

  it("allows the sender's GetSecretValue of each relay's secret", async () => {
    const decisions = [];
    for (const read of reads) {
      decisions.push([read.relay, await simulate(template, sender, getSecret(String(read.secret)), resolve)]);
    }
    expect(decisions).toEqual(reads.map((read) => [read.relay, 'Allowed']));
  });

  /** Every `action resource` the sender's role allows with an action of `service` (or `*`). */
  const grantedOn = (service: string) =>
    new Set(
      roleStatements(template, sender, resolve)
        .filter((statement) => statement.Effect === 'Allow')
        .flatMap((statement) =>
          statement.Action.filter((action) => action === '*' || action.startsWith(`${service}:`)).flatMap(
            (action) => statement.Resource.map((resource) => `${action} ${resource}`),
          ),
        ),
    );

  it('allows the sender no other secret: another one, or a relay secret of the same name but another suffix', async () => {
    const others = [
      arnOf.secret('another-AbCdEf'),
      ...relays.map((relay) => relay.secret.replace(/-[A-Za-z0-9]{6}$/, '-ZzZzZz')),
    ];
    const allowed: string[] = [];
    for (const other of others) {
      if ((await simulate(template, sender, getSecret(other), resolve)) === 'Allowed') allowed.push(other);
    }
    expect(allowed).toEqual([]);
    // A grant on a third secret by its own ARN passes the above: the grants name the relays' only.
    expect(grantedOn('secretsmanager')).toEqual(
      new Set(relays.map((relay) => `secretsmanager:GetSecretValue ${relay.secret}`)),
    );
  });

  it("lets the sender decrypt only a relay secret's own key, and only through Secrets Manager", async () => {
    const keys = relays.flatMap((relay) => (relay.key === undefined ? [] : [relay.key]));
    expect(grantedOn('kms')).toEqual(new Set(keys.map((key) => `kms:Decrypt ${key}`)));
    const decisions: string[][] = [];
    for (const key of keys) {
      const decrypt = (context: SimulatedRequest['context']) =>
        simulate(
          template,
          sender,
          { action: 'kms:Decrypt', resource: key, context },
          resolve,
          DEFAULT_KEY_POLICY,
        );
      decisions.push([key, await decrypt({ 'kms:ViaService': SECRETS_MANAGER }), await decrypt({})]);
    }
    expect(decisions).toEqual(keys.map((key) => [key, 'Allowed', 'ImplicitlyDenied']));
  });

  it("allows no other function to read any relay's secret", async () => {
    const allowed: string[] = [];
    for (const name of POSTDATE_FUNCTIONS.filter((fn) => fn !== 'sender')) {
      for (const { secret } of relays) {
        if ((await simulate(template, roleOf(name), getSecret(secret), resolve)) === 'Allowed') {
          allowed.push(`${name} ${secret}`);
        }
      }
    }
    expect(allowed).toEqual([]);
  });
});
