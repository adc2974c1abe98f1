import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { parseAddress } from '../lambdas/core/addresses.js';
import { type BusEvents, readBusEvents } from '../lambdas/core/busEvents.js';
import { CONFIG_SETTINGS, PROP_SETTINGS, type PropSettingName } from '../lambdas/core/configSpec.js';
import type { PostdateStackProps } from './PostdateStack.js';
import { POSTDATE_DEFAULTS, type PostdateProps, PostdatePropsError } from './postdateProps.js';

/**
 * Placeholders that let a bare `cdk synth` work. They are not deliverable senders: the stack warns
 * when they are in use, and docs/deploy.md says to pass real ones with `-c defaultFrom=… -c allowedFrom=…`.
 */
export const PLACEHOLDER_SENDER = {
  defaultFrom: 'postdate@example.com',
  allowedFrom: '*@example.com',
} as const;

/**
 * Every context key the app reads (`cdk deploy -c key=value`, or `context` in cdk.json): a prop for
 * every row of lambdas/core/configSpec.ts the construct sets, under the prop's name, and the
 * settings of the stack and the construct alone.
 */
export const CONTEXT_KEYS = [
  'stackName',
  ...PROP_SETTINGS,
  'smtpSecretArn',
  'smtpSecretKeyArn',
  'sweepIntervalMinutes',
  'senderMaxConcurrency',
  'senderMinPollers',
  'senderMaxPollers',
  'webhookMaxConcurrency',
  'apiRateLimit',
  'apiBurstLimit',
  'authorizerCacheSeconds',
  'alarmTopicArn',
  'alarmEmail',
  'sesNotificationTopicArn',
  'sesNotificationTopicArns',
  'eventBusArn',
  'removalPolicy',
] as const;

export type ContextKey = (typeof CONTEXT_KEYS)[number];

/** `arn:{partition}:secretsmanager:{region}:{account}:secret:{name}-{6 characters}`. */
const COMPLETE_SECRET_ARN = /^arn:[a-z-]+:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+-[A-Za-z0-9]{6}$/;

export interface AppSettings {
  readonly stackName: string;
  readonly stackProps: PostdateStackProps;
}

/**
 * Reads the stack's settings from CDK context. Values arrive as strings from `-c` and as JSON
 * values from cdk.json; both are accepted. Malformed values are collected and thrown together;
 * range checks are the construct's (it names the same keys). `keys`, every context key there is,
 * lets a key that looks like a setting (camelCase) and is none be refused with them: `-c
 * maxAtempts=5` would otherwise deploy the default. CDK's own keys have `@`, `:` or `-`.
 */
export function settingsFromContext(
  get: (key: ContextKey) => unknown,
  keys: readonly string[] = [],
): AppSettings {
  const problems: string[] = [];
  const known = new Set<string>(CONTEXT_KEYS);
  for (const key of keys.filter((key) => /^[a-z][A-Za-z0-9]*$/.test(key) && !known.has(key))) {
    problems.push(
      `context ${key} is no Postdate setting (docs/deploy.md, "Settings", lists them; docs/configuration.md the props)`,
    );
  }
  const text = (key: ContextKey): string | undefined => {
    const value = get(key);
    if (value === undefined || value === null) return undefined;
    const asText = String(value).trim();
    return asText === '' ? undefined : asText;
  };
  const number = (key: ContextKey): number | undefined => {
    const raw = text(key);
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (!Number.isFinite(value)) problems.push(`context ${key} must be a number, got "${raw}"`);
    return value;
  };
  const flag = (key: ContextKey): boolean | undefined => {
    const raw = text(key)?.toLowerCase();
    if (raw === undefined) return undefined;
    if (raw === 'true') return true;
    if (raw === 'false') return false;
    problems.push(`context ${key} must be true or false, got "${raw}"`);
    return undefined;
  };

  // `all`, `none` or types: comma-separated from `-c`, or a JSON list in cdk.json (an empty one is none).
  const eventTypes = (key: ContextKey): BusEvents | undefined => {
    const value = get(key);
    if (Array.isArray(value) && value.length === 0) return 'none';
    const raw = text(key);
    if (raw === undefined) return undefined;
    const read = readBusEvents(raw);
    if (!read.ok) problems.push(`context ${key}: ${read.problem}`);
    return read.ok ? read.busEvents : undefined;
  };

  const defaultFrom = text('defaultFrom');
  const allowedFrom = text('allowedFrom');
  const placeholders: string[] = [];
  if (defaultFrom === undefined) placeholders.push('defaultFrom');
  if (allowedFrom === undefined) placeholders.push('allowedFrom');

  const removal = text('removalPolicy')?.toLowerCase();
  let removalPolicy: RemovalPolicy | undefined;
  if (removal === 'retain') removalPolicy = RemovalPolicy.RETAIN;
  else if (removal === 'destroy') removalPolicy = RemovalPolicy.DESTROY;
  else if (removal !== undefined)
    problems.push(`context removalPolicy must be "retain" or "destroy", got "${removal}"`);

  // An imported secret is granted by its ARN; a partial one (no `-AbCdEf` suffix) matches nothing.
  const smtpSecretArn = text('smtpSecretArn');
  if (smtpSecretArn !== undefined && !COMPLETE_SECRET_ARN.test(smtpSecretArn)) {
    problems.push(
      `context smtpSecretArn must be the secret's complete ARN, ending in the six-character suffix Secrets Manager adds (…:secret:name-AbCdEf), got "${smtpSecretArn}"`,
    );
  }

  // SNS takes one bare address as an email subscription's endpoint, and refuses anything else at deploy.
  const alarmEmail = text('alarmEmail');
  const alarmAddress = alarmEmail === undefined ? undefined : parseAddress(alarmEmail);
  if (alarmAddress !== undefined && !(alarmAddress.ok && alarmAddress.value.address === alarmEmail)) {
    problems.push(`context alarmEmail must be one email address (oncall@example.com), got "${alarmEmail}"`);
  }

  // A topic, bus or key is imported by its ARN; a bare name would import nothing that exists.
  const arnOf = (key: ContextKey, service: string): string | undefined => {
    const value = text(key);
    if (value !== undefined && (!value.startsWith('arn:') || value.split(':')[2] !== service)) {
      problems.push(`context ${key} must be an ARN of ${service} (arn:…:${service}:…), got "${value}"`);
    }
    return value;
  };

  const smtpSecretKeyArn = arnOf('smtpSecretKeyArn', 'kms');
  if (smtpSecretKeyArn !== undefined && smtpSecretArn === undefined) {
    problems.push('context smtpSecretKeyArn needs smtpSecretArn');
  }

  // One SES topic per Region SES sends from (DESIGN §15): a comma-separated list, or the one topic.
  const sesNotificationTopicArn = arnOf('sesNotificationTopicArn', 'sns');
  const sesNotificationTopicArns = text('sesNotificationTopicArns')
    ?.split(',')
    .map((arn) => arn.trim())
    .filter((arn) => arn !== '');
  const notSns = sesNotificationTopicArns?.filter(
    (arn) => !arn.startsWith('arn:') || arn.split(':')[2] !== 'sns',
  );
  if (notSns !== undefined && notSns.length > 0) {
    problems.push(
      `context sesNotificationTopicArns must list sns ARNs (arn:…:sns:…), got "${notSns.join(',')}"`,
    );
  }
  if (sesNotificationTopicArn !== undefined && sesNotificationTopicArns !== undefined) {
    problems.push(
      'context sesNotificationTopicArn and sesNotificationTopicArns were both given: list every topic in sesNotificationTopicArns',
    );
  }

  // Each row by its kind; the senders are read above (a bare synth gets placeholders).
  const settings: Partial<Record<PropSettingName, number | boolean | string | BusEvents | undefined>> = {};
  for (const name of PROP_SETTINGS) {
    const type = CONFIG_SETTINGS[name].kind.type;
    if (type === 'senders' || name === 'defaultFrom') continue;
    settings[name] =
      type === 'integer' || type === 'rate'
        ? number(name)
        : type === 'boolean'
          ? flag(name)
          : type === 'busEvents'
            ? eventTypes(name)
            : text(name);
  }
  // Read by the parser of each row's kind, so each value has its prop's type.
  const fromSpec = settings as Partial<Pick<PostdateProps, PropSettingName>>;

  const rateLimit = number('apiRateLimit');
  // Provisioned mode for the sender (PostdateProps.senderPollers): either key sets it, the other
  // taking AWS's default (2 and 200 pollers).
  const minPollers = number('senderMinPollers');
  const maxPollers = number('senderMaxPollers');
  const burstLimit = number('apiBurstLimit');
  const sweepMinutes = number('sweepIntervalMinutes');
  const cacheSeconds = number('authorizerCacheSeconds');

  const appSettings: AppSettings = {
    stackName: text('stackName') ?? 'Postdate',
    stackProps: {
      description: 'Postdate: deferred transactional email, never lost, never sent twice by accident',
      postdate: {
        ...fromSpec,
        defaultFrom: defaultFrom ?? PLACEHOLDER_SENDER.defaultFrom,
        allowedFrom: (allowedFrom ?? PLACEHOLDER_SENDER.allowedFrom).split(','),
        sweepInterval: sweepMinutes === undefined ? undefined : Duration.minutes(sweepMinutes),
        senderMaxConcurrency: number('senderMaxConcurrency'),
        senderPollers:
          minPollers === undefined && maxPollers === undefined
            ? undefined
            : { minimum: minPollers ?? 2, maximum: maxPollers ?? 200 },
        webhookMaxConcurrency: number('webhookMaxConcurrency'),
        apiThrottle:
          rateLimit === undefined && burstLimit === undefined
            ? undefined
            : {
                rateLimit: rateLimit ?? POSTDATE_DEFAULTS.apiThrottle.rateLimit,
                burstLimit: burstLimit ?? POSTDATE_DEFAULTS.apiThrottle.burstLimit,
              },
        authorizerCacheTtl: cacheSeconds === undefined ? undefined : Duration.seconds(cacheSeconds),
        removalPolicy,
      },
      smtpSecretArn,
      smtpSecretKeyArn,
      alarmTopicArn: arnOf('alarmTopicArn', 'sns'),
      sesNotificationTopicArn,
      sesNotificationTopicArns,
      eventBusArn: arnOf('eventBusArn', 'events'),
      alarmEmail,
      placeholders,
    },
  };
  if (problems.length > 0) throw new PostdatePropsError(problems);
  return appSettings;
}
