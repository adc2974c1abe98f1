import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { CONFIG_SETTINGS, PROP_SETTINGS, RESOURCE_SETTINGS } from '../../lambdas/core/configSpec.js';
import { CONTEXT_KEYS, settingsFromContext } from '../../lib/contextProps.js';
import { propsEnvironment, RESOURCE_ENV } from '../../lib/functionEnvironment.js';
import { resolvePostdateProps } from '../../lib/postdateProps.js';
import { configEnvironment as localConfigEnvironment } from '../../local/localEnv.js';
import { synthesizePostdate, TEST_PROPS } from './support/synthesize.js';

const propVariables = PROP_SETTINGS.map((name) => CONFIG_SETTINGS[name].variable);

describe('the construct and the local stack carry every row of the configuration spec', () => {
  it('puts every row the construct sets into the environment of each of its functions', () => {
    const { template } = synthesizePostdate(TEST_PROPS);
    const functions = Object.values(template.findResources('AWS::Lambda::Function')).filter(
      (resource) => resource.Properties?.Environment?.Variables?.[RESOURCE_ENV.tableName] !== undefined,
    );
    expect(functions.length).toBeGreaterThanOrEqual(5);
    for (const resource of functions) {
      const variables = Object.keys(resource.Properties.Environment.Variables as Record<string, unknown>);
      expect(variables).toEqual(expect.arrayContaining(propVariables));
    }
  });

  it('reads every such row from CDK context under its prop name', () => {
    expect(CONTEXT_KEYS).toEqual(expect.arrayContaining(PROP_SETTINGS));
    const context: Record<string, string> = {};
    const expected: Record<string, unknown> = {};
    for (const name of PROP_SETTINGS) {
      const kind = CONFIG_SETTINGS[name].kind;
      if (kind.type === 'integer' || kind.type === 'rate') {
        context[name] = '7';
        expected[name] = 7;
      } else if (kind.type === 'boolean') {
        context[name] = 'true';
        expected[name] = true;
      } else if (kind.type === 'senders') {
        context[name] = 'a@example.org,*@example.net';
        expected[name] = ['a@example.org', '*@example.net'];
      } else if (kind.type === 'busEvents') {
        context[name] = 'message.sent, message.dead';
        expected[name] = ['message.sent', 'message.dead'];
      } else {
        context[name] = `${name}.example.org`;
        expected[name] = `${name}.example.org`;
      }
    }
    const settings = settingsFromContext((key) => context[key]);
    expect(settings.stackProps.postdate).toMatchObject(expected);
  });

  it('the local stack sets the same variables on its functions as the construct', () => {
    const resolved = resolvePostdateProps({ ...TEST_PROPS.postdate, maxSendRate: 3 });
    const construct = propsEnvironment(resolved, 'smtp.example.net', 'PostdateUnderTest');
    const config = loadConfig({ POSTDATE_MAX_SEND_RATE: '3', SMTP_USER: 'u', SMTP_PASS: 'p' }, 'local');
    const local = localConfigEnvironment(config);
    // The local stack sets SMTP_HOST and SMTP_PORT itself (the sink or the relay).
    const localVariables = new Set([...Object.keys(local), 'SMTP_HOST', 'SMTP_PORT']);
    expect(propVariables.filter((variable) => !localVariables.has(variable))).toEqual([]);
    // What the local stack sets beyond the construct: the API port, the relay's login (in AWS
    // read from the SMTP secret) and the webhooks' leave to use http and private addresses (AWS
    // never has it), none of them a prop.
    const beyond = Object.keys(local).filter((variable) => !(variable in construct));
    expect(beyond.sort()).toEqual([
      'POSTDATE_PORT',
      'POSTDATE_WEBHOOK_ALLOW_PRIVATE_URLS',
      'SMTP_PASS',
      'SMTP_USER',
    ]);
    // And each reads back to the same Config.
    expect(loadConfig(local, 'local')).toEqual(config);
  });

  it("documents each prop's default (TSDoc in lib/postdateProps.ts) as the spec has it", () => {
    const source = readFileSync(new URL('../../lib/postdateProps.ts', import.meta.url), 'utf8');
    const props = source.slice(source.indexOf('export interface PostdateProps'));
    const documented: Record<string, string> = {};
    for (const match of props.matchAll(/@default ([^\n]+)\n\s*\*\/\n\s*readonly (\w+)\?/g)) {
      documented[match[2] ?? ''] = (match[1] ?? '').trim();
    }
    for (const name of PROP_SETTINGS) {
      const value = CONFIG_SETTINGS[name].aws;
      if (typeof value === 'number' || typeof value === 'boolean') {
        expect(documented[name], name).toBe(String(value));
      }
    }
  });

  it('names each resource variable from the spec', () => {
    expect(Object.values(RESOURCE_ENV).sort()).toEqual(
      Object.values(RESOURCE_SETTINGS)
        .map((spec) => spec.variable)
        .sort(),
    );
  });
});
