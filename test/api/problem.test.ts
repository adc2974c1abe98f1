import { describe, expect, it } from 'vitest';
import { PROBLEM, problem } from '../../lambdas/core/problem.js';

describe("the API's problem kinds (RFC 9457)", () => {
  it('builds type, title, status and detail from the kind', () => {
    expect(problem('notFound', 'No message with this id.')).toEqual({
      type: 'urn:postdate:problem:not-found',
      title: 'Not found',
      status: 404,
      detail: 'No message with this id.',
    });
  });

  it('adds extensions without letting them override the standard members', () => {
    expect(
      problem('conflict', 'The message is sent.', {
        extensions: { current_status: 'sent', status: 200, type: 'x' },
      }),
    ).toEqual({
      type: PROBLEM.conflict.type,
      title: PROBLEM.conflict.title,
      status: 409,
      detail: 'The message is sent.',
      current_status: 'sent',
    });
  });

  it('gives every kind a distinct urn type', () => {
    const types = Object.values(PROBLEM).map((kind) => kind.type);
    expect(new Set(types).size).toBe(types.length);
    for (const type of types) expect(type).toMatch(/^urn:postdate:problem:[a-z-]+$/);
  });
});
