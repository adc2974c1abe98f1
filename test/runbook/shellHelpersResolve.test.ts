import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { synthesizePostdate, TEST_PROPS } from '../cdk/support/synthesize.js';

/**
 * The runbook's shell (docs/operations.md, "Tools and setup") finds every name it needs in the
 * deployed stack: `out NAME` reads a CloudFormation output, `fn PART` the one function whose logical
 * id contains PART, and the runbook's own `contains(LogicalResourceId,'PART')` queries one resource.
 * Each must find exactly one thing in the synthesized stack (with SES feedback: procedure 6), or the operator's variable is empty (or
 * holds two names) and every command after it fails at 3 a.m.
 */

const DOCS = ['runbook.md', 'operations.md'].map((file) => ({
  file,
  text: readFileSync(join(import.meta.dirname, '../../docs', file), 'utf8'),
}));

function used(pattern: RegExp): [string, string][] {
  return DOCS.flatMap(({ file, text }) =>
    [...text.matchAll(pattern)].map((match) => [file, match[1] as string] as [string, string]),
  );
}

describe("the runbook's shell names resolve in the synthesized stack", () => {
  // With SES feedback, so that procedure 6's bounces function and its failure queue are there.
  const template = synthesizePostdate({
    ...TEST_PROPS,
    env: { account: '123456789012', region: 'eu-west-1' },
    sesNotificationTopicArns: ['arn:aws:sns:eu-west-1:123456789012:ses-feedback'],
  }).template.toJSON() as {
    Resources: Record<string, { Type: string }>;
    Outputs: Record<string, unknown>;
  };
  const resources = Object.entries(template.Resources);

  it.each(used(/\$\(out ([A-Za-z]+)\)/g))('%s: out %s is an output of the stack', (_file, output) => {
    expect(Object.keys(template.Outputs)).toContain(output);
  });

  it.each(used(/\$\(fn ([A-Za-z]+)\)/g))('%s: fn %s names exactly one function', (_file, part) => {
    const found = resources.filter(
      ([id, resource]) => resource.Type === 'AWS::Lambda::Function' && id.includes(part),
    );
    expect(found.map(([id]) => id)).toHaveLength(1);
  });

  it.each(
    used(/ResourceType=='(AWS::[A-Za-z:]+)' && contains\(LogicalResourceId, *'([A-Za-z]+)'\)/g).map(
      ([file]) => [file],
    ),
  )('%s: every describe-stack-resources query names exactly one resource', (file) => {
    const text = DOCS.find((doc) => doc.file === file)?.text ?? '';
    for (const match of text.matchAll(
      /ResourceType=='(AWS::[A-Za-z:]+)' && contains\(LogicalResourceId, *'([A-Za-z]+)'\)/g,
    )) {
      const [, type, part] = match as unknown as [string, string, string];
      if (part === '$1') continue;
      const found = resources.filter(([id, resource]) => resource.Type === type && id.includes(part));
      expect(
        found.map(([id]) => id),
        `${type} containing ${part}`,
      ).toHaveLength(1);
    }
  });
});
