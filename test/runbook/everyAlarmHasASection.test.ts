import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import { describe, expect, it } from 'vitest';
import { Postdate } from '../../lib/Postdate.js';
import { testApp } from '../cdk/support/synthesize.js';

/**
 * DESIGN §6: alarms are "the way to a person", and the runbook is what that person reads at 3 a.m.
 * Every alarm the construct can create (all of it switched on: two relays, SES feedback, webhooks)
 * must be named, by the id the console shows inside the alarm's name, in a section heading of
 * docs/runbook.md, and its description must send the reader to the runbook, not elsewhere.
 */

const RUNBOOK = readFileSync(join(import.meta.dirname, '../../docs/runbook.md'), 'utf8');
const LINES = RUNBOOK.split('\n');
const HEADINGS = LINES.filter((line) => line.startsWith('## '));
/** Procedure 8, "Every other alarm": one list item per alarm or group of alarms. */
const OTHERS = LINES.slice(LINES.findIndex((line) => line.startsWith('## 8. '))).filter((line) =>
  line.startsWith('- '),
);

/** GitHub's anchor of a heading: lower case, punctuation but `-` dropped, spaces to `-`. */
function slug(heading: string): string {
  return heading
    .replace(/^#+ /, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function everyAlarm(): cloudwatch.Alarm[] {
  const stack = new Stack(testApp(), 'OnCall', { env: { account: '123456789012', region: 'eu-west-1' } });
  new Postdate(stack, 'Mail', {
    defaultFrom: 'noreply@example.org',
    allowedFrom: ['*@example.org'],
    relays: [
      { name: 'primary', host: 'smtp.primary.example', secret: new secretsmanager.Secret(stack, 'Primary') },
      { name: 'backup', host: 'smtp.backup.example', secret: new secretsmanager.Secret(stack, 'Backup') },
    ],
    sesNotificationTopics: [
      sns.Topic.fromTopicArn(stack, 'Feedback', 'arn:aws:sns:eu-west-1:123456789012:ses-feedback'),
    ],
  });
  return stack.node
    .findAll()
    .filter((construct): construct is cloudwatch.Alarm => construct instanceof cloudwatch.Alarm);
}

/** The id an operator sees in the console's alarm name (`OnCall-MailOpsSenderErrors1A2B…`), as the runbook quotes it. */
function sectionNaming(alarmId: string): string | undefined {
  return [...HEADINGS, ...OTHERS].find((line) => line.includes(`\`${alarmId}\``));
}

describe('docs/runbook.md has a section for every alarm', () => {
  const alarms = everyAlarm();

  it('finds the alarms of every part (Ops, webhooks, bounces, one per relay)', () => {
    expect(alarms.length).toBeGreaterThan(20);
  });

  it.each(alarms.map((alarm) => [alarm.node.id]))('%s has a section of the runbook', (id) => {
    const base = id.replace(/-(primary|backup)$/, '');
    expect(
      sectionNaming(id) ?? sectionNaming(base),
      `no section of docs/runbook.md names \`${base}\``,
    ).toBeDefined();
  });

  it.each(alarms.map((alarm) => [alarm.node.id, alarm]))(
    "%s's description points to the runbook",
    (_id, alarm) => {
      const description = Stack.of(alarm).resolve(
        (alarm.node.defaultChild as cloudwatch.CfnAlarm).alarmDescription,
      ) as string;
      const named = /\(docs\/runbook\.md, `([A-Za-z0-9]+)`\)$/.exec(description)?.[1];
      expect(named, description).toBeDefined();
      // One pointer, the one it ends with: a second (`§5`, `7`, a bare path) says the same twice (0267).
      expect(description.match(/docs\/runbook\.md/g), description).toHaveLength(1);
      expect(description.length, 'CloudWatch takes at most 1024 characters').toBeLessThanOrEqual(1024);
      expect(sectionNaming(named as string), `the runbook names ${named}`).toBeDefined();
    },
  );

  it('every link inside the runbook leads to one of its headings', () => {
    const anchors = new Set(HEADINGS.map(slug));
    const links = [...RUNBOOK.matchAll(/\]\(#([^)]+)\)/g)].map((match) => match[1]);
    expect(links.filter((link) => !anchors.has(link as string))).toEqual([]);
  });
});
