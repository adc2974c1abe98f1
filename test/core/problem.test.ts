import { describe, expect, it } from 'vitest';
import { jsonPointer, uniqueByField, validationProblem } from '../../lambdas/core/problem.js';

describe('problem details (RFC 9457)', () => {
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

  it('writes fields as RFC 6901 JSON Pointers, escaping ~ and /', () => {
    expect(jsonPointer(['to', 2])).toBe('/to/2');
    expect(jsonPointer(['headers', 'X~A/B'])).toBe('/headers/X~0A~1B');
    expect(jsonPointer([])).toBe('body');
  });
});
