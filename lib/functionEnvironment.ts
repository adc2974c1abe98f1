import {
  CONFIG_SETTINGS,
  PROP_SETTINGS,
  type PropSettingName,
  RESOURCE_SETTINGS,
  type ResourceName,
  type SettingValue,
  settingsEnvironment,
} from '../lambdas/core/configSpec.js';
import { METRICS } from '../lambdas/core/metricNames.js';
import type { ResolvedPostdateProps, ResolvedPostdateRelay } from './postdateProps.js';

/**
 * The configuration every function reads with `loadConfig(process.env, 'aws')` (DESIGN §8): every row
 * of lambdas/core/configSpec.ts the construct sets, from the prop of the same name, so the functions
 * and the local stack read one contract. SMTP credentials are not here: the sender reads them from
 * the secret named by `POSTDATE_SMTP_SECRET_ARN`. `stackName` becomes `POSTDATE_STACK`.
 */
export function propsEnvironment(
  props: ResolvedPostdateProps,
  smtpHost: string,
  stackName: string,
): Record<string, string> {
  const values: Partial<Record<PropSettingName, SettingValue | undefined>> = {};
  for (const name of PROP_SETTINGS) values[name] = props[name];
  values.smtpHost = smtpHost;
  return {
    ...settingsEnvironment(values, PROP_SETTINGS),
    // The `stack` dimension of every metric (DESIGN §6), read by lambdas/adapters/powertoolsMetrics.ts.
    [RESOURCE_SETTINGS.stackName.variable]: stackName,
    POWERTOOLS_SERVICE_NAME: METRICS.service,
    POWERTOOLS_METRICS_NAMESPACE: METRICS.namespace,
  };
}

/** Resource variables (helpers' rules): each function gets only the ones it uses. */
export const RESOURCE_ENV = Object.fromEntries(
  Object.entries(RESOURCE_SETTINGS).map(([name, setting]) => [name, setting.variable]),
) as { readonly [N in ResourceName]: (typeof RESOURCE_SETTINGS)[N]['variable'] };

/**
 * POSTDATE_RELAYS from the prop `relays` (DESIGN §15): the list in order, each entry naming its
 * secret's ARN instead of a user and a password (lambdas/core/relays.ts reads it). Nothing without
 * the prop: `SMTP_*` is the one relay. The ARN may be a token; CloudFormation writes it into the text.
 */
export function relaysEnvironment(
  relays: readonly ResolvedPostdateRelay[] | undefined,
): Record<string, string> {
  if (relays === undefined) return {};
  const entries = relays.map((relay) => ({
    name: relay.name,
    host: relay.host,
    port: relay.port,
    secure: relay.secure,
    require_tls: relay.requireTls,
    secret_arn: relay.secret.secretArn,
    ...(relay.maxSendRate === undefined ? {} : { max_send_rate: relay.maxSendRate }),
  }));
  return { [CONFIG_SETTINGS.relaysJson.variable]: JSON.stringify(entries) };
}
