import { describe, expect, it } from 'vitest';
import { SmtpCredentialsError } from '../../lambdas/adapters/smtpCredentials.js';
import { EnqueueContentionError } from '../../lambdas/api/routes/enqueue.js';
import { ConfigError } from '../../lambdas/core/config.js';
import { ERROR_CLASS, isTransient, PostdateError } from '../../lambdas/core/postdateError.js';
import { validationProblem } from '../../lambdas/core/problem.js';
import { ApiKeyError } from '../../lambdas/keys/apiKeys.js';
import { OutboxInputError } from '../../lambdas/outbox/outboxItems.js';
import { SweepIncompleteError } from '../../lambdas/sweeper/createSweeperHandler.js';
import { PostdatePropsError } from '../../lib/postdateProps.js';

const emptySweep = {
  shardErrors: ['shard 3'],
  gateErrors: [],
  truncatedShards: [],
  failed: 0,
  waiting: { errors: [] },
} as unknown as ConstructorParameters<typeof SweepIncompleteError>[0];

describe('one error base with a name, a cause and a retry class', () => {
  it('keeps the cause it was given', () => {
    const cause = Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
    const error = new PostdateError('the queue refused', { class: 'transient', cause });

    expect(error.cause).toBe(cause);
    expect(error.class).toBe('transient');
    expect(error).toBeInstanceOf(Error);
    expect(new PostdateError('no cause', { class: 'permanent' })).not.toHaveProperty('cause');
  });

  it('is the base of every typed error of the functions and the construct, each with its name and class', () => {
    const cases: [PostdateError, string, string][] = [
      [new EnqueueContentionError('lost'), 'EnqueueContentionError', ERROR_CLASS.transient],
      [new SweepIncompleteError(emptySweep), 'SweepIncompleteError', ERROR_CLASS.transient],
      [new ConfigError('POSTDATE_X', 'is not a number'), 'ConfigError', ERROR_CLASS.config],
      [
        new OutboxInputError('bad tenant', validationProblem([{ field: 'tenant', message: 'bad' }])),
        'OutboxInputError',
        ERROR_CLASS.permanent,
      ],
      [new ApiKeyError('unknown', 'not-found'), 'ApiKeyError', ERROR_CLASS.permanent],
      [new PostdatePropsError(['bad']), 'PostdatePropsError', ERROR_CLASS.config],
      [
        new SmtpCredentialsError('read failed', { code: 'ESECRETREAD' }),
        'SmtpCredentialsError',
        ERROR_CLASS.transient,
      ],
      [new SmtpCredentialsError('not JSON', { code: 'ECONFIG' }), 'SmtpCredentialsError', ERROR_CLASS.config],
    ];
    for (const [error, name, errorClass] of cases) {
      expect(error).toBeInstanceOf(PostdateError);
      expect(error.name).toBe(name);
      expect(error.class).toBe(errorClass);
    }
  });

  it('keeps the cause of a secret read', () => {
    const cause = Object.assign(new Error('denied'), { name: 'AccessDeniedException' });
    const error = new SmtpCredentialsError('the SMTP secret may not be read', { code: 'ECONFIG', cause });

    expect(error.cause).toBe(cause);
  });

  it('decides a retry by the class, not by the name or the message', () => {
    expect(isTransient(new EnqueueContentionError('lost'))).toBe(true);
    expect(isTransient(new PostdateError('busy', { class: 'transient' }))).toBe(true);
    expect(isTransient(new ConfigError('POSTDATE_X', 'bad'))).toBe(false);
    const lookalike = Object.assign(new Error('transient'), {
      name: 'EnqueueContentionError',
      class: 'transient',
    });
    expect(isTransient(lookalike)).toBe(false);
    expect(isTransient(undefined)).toBe(false);
  });
});
