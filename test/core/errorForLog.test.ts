import { describe, expect, it } from 'vitest';
import { errorForLog, redactAddresses } from '../../lambdas/core/errorForLog.js';

describe('errorForLog', () => {
  it('keeps the name, a string code and the message with every address replaced', () => {
    const error = Object.assign(
      new Error("Can't send mail - all recipients were rejected: 550 <ada@example.com>"),
      {
        code: 'EENVELOPE',
      },
    );
    expect(errorForLog(error)).toEqual({
      name: 'Error',
      code: 'EENVELOPE',
      message: "Can't send mail - all recipients were rejected: 550 <redacted>",
    });
  });

  it('cuts a long message to 200 characters and leaves out a code that is not a string', () => {
    const error = Object.assign(new TypeError('x'.repeat(500)), { code: 42 });
    expect(errorForLog(error)).toEqual({ name: 'TypeError', message: 'x'.repeat(200) });
  });

  it('says only the type of something thrown that is not an object', () => {
    expect(errorForLog('bob@example.com')).toEqual({ name: 'non-error', message: 'string' });
    expect(errorForLog(undefined)).toEqual({ name: 'non-error', message: 'undefined' });
  });

  it('redacts bare and bracketed addresses alike', () => {
    expect(redactAddresses('to ada@example.com and <bob@example.org>.')).toBe(
      'to <redacted> and <redacted>.',
    );
  });
});
