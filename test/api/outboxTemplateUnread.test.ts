/**
 * The outbox's template check renders with Handlebars, which `readOutboxTemplate` loads with the first
 * read (decision 0287). A template the application made itself, in a process that never read one, is
 * refused with what to do (DESIGN §4: the outbox validates as POST /v1/messages does; bad input gets a
 * problem naming the field and the reason, and nothing is written). This file runs in its own module
 * graph (the `parts` project isolates it), so no other test's read has loaded the renderer.
 */
import { describe, expect, it } from 'vitest';
import { buildOutboxWrite, OutboxInputError } from '../../lambdas/outbox/index.js';

describe('a template message given a template no read in this process made', () => {
  it('is refused naming /template/name and readOutboxTemplate, before anything is built', () => {
    const build = () =>
      buildOutboxWrite({
        tableName: 'postdate-outbox-unread',
        tenant: 'acme',
        idempotencyKey: 'outbox-unread-1',
        now: new Date('2026-12-06T12:00:00.000Z'),
        body: {
          to: ['ada@example.com'],
          from: 'ops@example.com',
          template: { name: 'welcome' },
          data: { code: 'K' },
        },
        validation: { allowedFrom: ['*@example.com'], defaultFrom: 'ops@example.com', maxHorizonDays: 400 },
        template: {
          name: 'welcome',
          version: 1,
          content: { subject: 'Hi', text: '{{code}}', html: null },
          archived: false,
        },
      });
    expect(build).toThrow(OutboxInputError);
    let problem: OutboxInputError['problem'] | undefined;
    try {
      build();
    } catch (error) {
      problem = (error as OutboxInputError).problem;
    }
    expect(problem).toMatchObject({
      status: 422,
      detail: expect.stringMatching(/not read in this process.*readOutboxTemplate/),
      errors: [{ field: '/template/name', message: expect.stringMatching(/readOutboxTemplate/) }],
    });
  });
});
