import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  CONFIG_SETTINGS,
  LOCAL_LOG_SETTING,
  LOCAL_PORT_SETTINGS,
  LOCAL_TARGET_VARIABLE,
  REQUIRED,
  RESOURCE_SETTINGS,
  type SettingKind,
  type SettingSpec,
  type SettingValue,
} from '../lambdas/core/configSpec.js';

/**
 * docs/configuration.md, generated from lambdas/core/configSpec.ts (`npm run docs:config`);
 * test/core/configSpec.test.ts fails when the file and the spec differ.
 */
export const CONFIGURATION_DOC = new URL('../docs/configuration.md', import.meta.url);

export function configurationMarkdown(): string {
  const settings = Object.entries(CONFIG_SETTINGS).map(([name, spec]: [string, SettingSpec]) =>
    row([
      code(spec.variable),
      spec.prop ? `${code(name)}${spec.propDefault ? ` (default ${spec.propDefault})` : ''}` : '',
      defaultOf(spec),
      rangeOf(spec.kind),
      spec.aws === REQUIRED ? 'yes' : '',
      spec.description,
    ]),
  );
  const resources = Object.values(RESOURCE_SETTINGS).map((spec) =>
    row([code(spec.variable), spec.description]),
  );
  const ports = Object.values(LOCAL_PORT_SETTINGS).map((spec) =>
    row([code(spec.variable), String(spec.default), spec.description]),
  );
  return [
    '# Configuration',
    '',
    '<!-- Generated from lambdas/core/configSpec.ts by `npm run docs:config`: edit the spec, not this file. -->',
    '',
    'The same variables configure the Lambda functions (set by the CDK construct from the prop of the',
    'same name) and the local stack (read from the environment of `npm start`); DESIGN §8 is the',
    'contract. Each is validated once at start, and a bad value stops the start with a message that',
    'names the variable. Where a value differs from DESIGN §8, docs/decisions/ says why.',
    '',
    '## Settings',
    '',
    row(['variable', 'construct prop', 'default', 'range', 'required in AWS', 'meaning']),
    row(['---', '---', '---', '---', '---', '---']),
    ...settings,
    '',
    'Across settings: `POSTDATE_RETRY_CAP_SECONDS` is at least `POSTDATE_RETRY_BASE_SECONDS`;',
    '`POSTDATE_LEASE_SECONDS` > `POSTDATE_SENDER_TIMEOUT_SECONDS` > one whole attempt',
    '(lambdas/core/sendTiming.ts); `SMTP_USER` and `SMTP_PASS` go together.',
    '',
    '## Resource names',
    '',
    'Set by the construct (or the local stack) on each function that uses them; only',
    '`POSTDATE_TABLE_NAME` is required of every function.',
    '',
    row(['variable', 'meaning']),
    row(['---', '---']),
    ...resources,
    '',
    '## Local stack',
    '',
    `The local stack sets ${code(`${LOCAL_TARGET_VARIABLE}=true`)} on its functions, so they read the`,
    'local defaults above. Its other parts listen on these ports (0 picks any free port):',
    '',
    row(['variable', 'default', 'part']),
    row(['---', '---', '---']),
    ...ports,
    '',
    `and ${code(`${LOCAL_LOG_SETTING.variable}`)} (default ${code(LOCAL_LOG_SETTING.default)}) chooses ${LOCAL_LOG_SETTING.description}.`,
    '',
  ].join('\n');
}

function row(cells: readonly string[]): string {
  return `| ${cells.join(' | ')} |`;
}

function code(text: string): string {
  return `\`${text}\``;
}

function valueText(value: SettingValue | undefined): string {
  if (value === undefined) return 'none';
  if (typeof value === 'number') return String(value);
  return code(Array.isArray(value) ? value.join(',') : String(value));
}

function defaultOf(spec: SettingSpec): string {
  if (spec.aws === spec.local) return valueText(spec.local);
  const aws = spec.aws === REQUIRED ? 'required in AWS' : `${valueText(spec.aws)} in AWS`;
  return `${valueText(spec.local)} locally; ${aws}`;
}

function rangeOf(kind: SettingKind): string {
  switch (kind.type) {
    case 'integer': {
      const unit = { seconds: ' s', hours: ' h', days: ' days', count: '', port: '', KiB: ' KiB', MB: ' MB' }[
        kind.unit
      ];
      return `whole number ${kind.min}–${kind.max}${unit}`;
    }
    case 'rate':
      return 'positive decimal, or `unlimited`';
    case 'boolean':
      return '`true`/`false` (or `1`/`0`)';
    case 'domain':
      return 'domain name';
    case 'host':
      return 'host name or IP address';
    case 'address':
      return 'one address, `a@b.c` or `Name <a@b.c>`';
    case 'senders':
      return 'addresses, `*@domain` or `*`, comma-separated';
    case 'relays':
      return 'JSON array of relays';
    case 'busEvents':
      return '`all`, `none` or message event types, comma-separated';
    case 'text':
      return 'text';
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(CONFIGURATION_DOC, configurationMarkdown());
  console.log(`wrote ${fileURLToPath(CONFIGURATION_DOC)}`);
}
