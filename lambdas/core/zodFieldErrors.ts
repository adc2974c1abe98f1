/**
 * zod issues as field errors: the field as a JSON Pointer, a message that never echoes the value.
 */
import type { ZodError } from 'zod';
import { type FieldError, jsonPointer } from './fieldErrors.js';

/**
 * Pass to every `safeParse`: issues then carry the value they judged, so a missing field is told by
 * `input === undefined` rather than by zod's message text (which changed between major versions).
 * The values never leave zodErrors.
 */
export const PARSE_CONTEXT = { reportInput: true } as const;

/** One FieldError per zod issue, the field as a JSON Pointer; values are never echoed. */
export function zodErrors(error: ZodError): FieldError[] {
  const errors: FieldError[] = [];
  for (const issue of error.issues) {
    const path = issue.path.filter((segment): segment is string | number => typeof segment !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        errors.push({ field: jsonPointer([...path, key]), message: 'is not a known field' });
      continue;
    }
    errors.push({ field: jsonPointer(path), message: issueMessage(issue) });
  }
  return errors;
}

function issueMessage(issue: ZodError['issues'][number]): string {
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return 'is required';
    if (issue.expected === 'object' && issue.path.length === 0) return 'must be a JSON object';
    if (issue.expected === 'int') return 'must be a whole number';
    return `must be ${issue.expected === 'array' || issue.expected === 'object' ? 'an' : 'a'} ${issue.expected}`;
  }
  if (issue.code === 'invalid_value')
    return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  return issue.message;
}
