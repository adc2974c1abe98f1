import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { OutboxInput } from '../../lambdas/outbox/index.js';

/**
 * docs/api-resources.md's outbox section names every input of `buildOutboxTransactItems`, so an
 * input that changes what is written (a retention, a replica count) is never one a reader cannot
 * find. The list below is checked against the exported type by tsc: an input added there and not
 * here, or the reverse, fails the type-check.
 */
type InputName =
  | keyof Extract<OutboxInput, { request: unknown }>
  | keyof Extract<OutboxInput, { body: unknown }>;

const INPUTS: Record<InputName, true> = {
  tableName: true,
  tenant: true,
  idempotencyKey: true,
  request: true,
  body: true,
  validation: true,
  now: true,
  groupHeadVersion: true,
  groupHeadReplicas: true,
  retentionDays: true,
  template: true,
};

function outboxSection(): string {
  const text = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'api-resources.md'), 'utf8');
  const start = text.indexOf('## The transactional outbox');
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end);
}

describe('the outbox section of docs/api-resources.md', () => {
  it.each(Object.keys(INPUTS))('documents the input `%s`', (name) => {
    expect(outboxSection()).toMatch(new RegExp(`\`${name}\``));
  });
});

/**
 * DESIGN §4: a group head is one of the items no path may put past a fraction of a partition, and the
 * outbox is a path ("exactly as if it came through the API"). The api reads the head it decides on
 * from one replica at random, eventually consistently until a raise beat it (store/groupHead.ts);
 * the documented loop must read it so too, or every outbox enqueue of a group is a consistent read of
 * replica 0, whatever `groupHeadReplicas` says: 3,000 a second bind one group.
 */
describe("the outbox example's read of the group head", () => {
  const call = /readGroupHeadVersion\(([^;]*)\);/.exec(outboxSection().split('```ts')[1] ?? '')?.[1] ?? '';

  it('reads one of the replicas, as many as the stack has', () => {
    expect(call).toMatch(/replicas: groupHeadReplicas\b/);
  });

  it('reads eventually consistently, and consistently only after a lost race', () => {
    expect(call).toMatch(/consistent: attempt > 1\b/);
  });
});
