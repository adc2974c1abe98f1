import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfig, loadSettings, settingValuesOf } from '../../lambdas/core/config.js';
import {
  AWS_CALL_RECORDING,
  CONFIG_SETTINGS,
  LOCAL_LOG_SETTING,
  LOCAL_PORT_SETTINGS,
  LOCAL_TARGET_VARIABLE,
  REQUIRED,
  RESOURCE_SETTINGS,
  type SettingName,
  type SettingSpec,
} from '../../lambdas/core/configSpec.js';
import { CONFIGURATION_DOC, configurationMarkdown } from '../../scripts/configurationDoc.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const names = Object.keys(CONFIG_SETTINGS) as SettingName[];
const specOf = (name: SettingName): SettingSpec => CONFIG_SETTINGS[name];

/** Every TypeScript file under a folder of the repository. */
function sources(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(ROOT, folder, file));
}

/** Variables a file reads: quoted `POSTDATE_…`/`SMTP_…` names and `env.NAME` reads. */
function variablesIn(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found = new Set<string>();
  for (const match of text.matchAll(
    /['"`]((?:POSTDATE|SMTP)_[A-Z0-9_]+)['"`]|env\.((?:POSTDATE|SMTP)_[A-Z0-9_]+)/g,
  )) {
    found.add(match[1] ?? match[2] ?? '');
  }
  return [...found];
}

/** A valid value of each row other than its default, in the environment's form. */
function otherValue(spec: SettingSpec): string {
  switch (spec.kind.type) {
    case 'integer':
      return String(spec.local === spec.kind.max ? spec.kind.min : spec.kind.max);
    case 'rate':
      return '2.5';
    case 'boolean':
      return spec.local === true ? 'false' : 'true';
    case 'domain':
      return 'mail.example.org';
    case 'host':
      return '2001:db8::25';
    case 'address':
      return 'ops@example.org';
    case 'senders':
      return 'ops@example.org';
    case 'relays':
      return '[{"name":"a","host":"127.0.0.1","port":2525,"secure":false,"require_tls":false}]';
    case 'busEvents':
      return 'message.sent,message.dead';
    case 'text':
      return 'some-text';
  }
}

/** A value no row of this kind accepts. */
function badValue(spec: SettingSpec): string | undefined {
  switch (spec.kind.type) {
    case 'integer':
      return String(spec.kind.max + 1);
    case 'rate':
      return 'fast';
    case 'boolean':
      return 'maybe';
    case 'domain':
      return 'not a domain';
    case 'host':
      return 'not a host';
    case 'address':
      return 'nobody';
    case 'senders':
      return 'nobody';
    case 'relays':
      return '[]';
    case 'busEvents':
      return 'message.snet';
    case 'text':
      return undefined;
  }
}

describe('the configuration spec (lambdas/core/configSpec.ts) and what is derived from it', () => {
  it('docs/configuration.md is what `npm run docs:config` generates from the spec', () => {
    expect(readFileSync(CONFIGURATION_DOC, 'utf8')).toBe(configurationMarkdown());
  });

  it('names each variable once', () => {
    const variables = [
      ...names.map((name) => specOf(name).variable),
      ...Object.values(RESOURCE_SETTINGS).map((spec) => spec.variable),
      ...Object.values(LOCAL_PORT_SETTINGS).map((spec) => spec.variable),
      LOCAL_TARGET_VARIABLE,
    ];
    expect(new Set(variables).size).toBe(variables.length);
  });

  it('holds every variable the functions and the local stack read', () => {
    const known = new Set([
      ...names.map((name) => specOf(name).variable),
      ...Object.values(RESOURCE_SETTINGS).map((spec) => spec.variable),
      ...Object.values(LOCAL_PORT_SETTINGS).map((spec) => spec.variable),
      LOCAL_LOG_SETTING.variable,
      LOCAL_TARGET_VARIABLE,
      ...Object.values(AWS_CALL_RECORDING),
    ]);
    const unknown = [...sources('lambdas'), ...sources('local')].flatMap((file) =>
      variablesIn(file)
        .filter((variable) => !known.has(variable))
        .map((variable) => `${variable} in ${file.slice(ROOT.length)}`),
    );
    expect(unknown).toEqual([]);
  });

  it('is read row by row by the loader: each variable sets its field', () => {
    for (const name of names) {
      const spec = specOf(name);
      const value = otherValue(spec);
      const settings = loadSettings({ [spec.variable]: value }, 'local');
      expect(settings[name], spec.variable).not.toEqual(spec.local);
    }
    // loadConfig returns the same settings, nested.
    const env = Object.fromEntries(
      names
        .filter((name) => specOf(name).kind.type !== 'integer')
        .map((name) => [specOf(name).variable, otherValue(specOf(name))]),
    );
    expect(settingValuesOf(loadConfig(env, 'local'))).toEqual(loadSettings(env, 'local'));
  });

  it('gives each target its defaults, and refuses an AWS start without a required one', () => {
    const local = loadSettings({}, 'local');
    for (const name of names) expect(local[name], name).toEqual(specOf(name).local);
    const required = names.filter((name) => specOf(name).aws === REQUIRED);
    expect(required.map((name) => specOf(name).variable).sort()).toEqual([
      'POSTDATE_ALLOWED_FROM',
      'POSTDATE_DEFAULT_FROM',
      'SMTP_HOST',
    ]);
    for (const name of required) {
      const env = Object.fromEntries(
        required
          .filter((other) => other !== name)
          .map((other) => [specOf(other).variable, otherValue(specOf(other))]),
      );
      expect(() => loadSettings(env, 'aws')).toThrow(
        new RegExp(`^${specOf(name).variable}: is required in AWS$`),
      );
    }
  });

  it('checks every row by its kind and names the variable', () => {
    for (const name of names) {
      const spec = specOf(name);
      const bad = badValue(spec);
      if (bad === undefined) continue;
      expect(() => loadSettings({ [spec.variable]: bad }, 'local'), spec.variable).toThrow(
        new RegExp(`^${spec.variable}: `),
      );
    }
  });
});
