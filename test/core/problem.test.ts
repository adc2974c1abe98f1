import { describe, expect, it } from 'vitest';
import {
  jsonPointer,
  PROBLEM,
  problem,
  uniqueByField,
  validationProblem,
} from '../../lambdas/core/problem.js';

describe('problem details (RFC 9457)', () => {
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

  it('keeps one error per field (the first) and summarises the fields in the detail', () => {
    const result = validationProblem([
      { field: '/to/0', message: 'first' },
      { field: '/to/0', message: 'second' },
      { field: '/subject', message: 'is required' },
    ]);
    expect(result.status).toBe(400);
    expect(result.errors).toEqual([
      { field: '/to/0', message: 'first' },
      { field: '/subject', message: 'is required' },
    ]);
    expect(result.detail).toBe('2 fields are invalid: /to/0, /subject.');
    expect(uniqueByField([])).toEqual([]);
  });

  it('gives every kind a distinct urn type', () => {
    const types = Object.values(PROBLEM).map((kind) => kind.type);
    expect(new Set(types).size).toBe(types.length);
    for (const type of types) expect(type).toMatch(/^urn:postdate:problem:[a-z-]+$/);
  });

  it('writes fields as RFC 6901 JSON Pointers, escaping ~ and /', () => {
    expect(jsonPointer(['to', 2])).toBe('/to/2');
    expect(jsonPointer(['headers', 'X~A/B'])).toBe('/headers/X~0A~1B');
    expect(jsonPointer([])).toBe('body');
  });
});
