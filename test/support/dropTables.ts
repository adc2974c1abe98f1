import { afterAll } from 'vitest';

/**
 * Run before every test file of the projects on the run's emulators (vitest.config.ts
 * `setupFiles`): once the file's own hooks have stopped what it started, the tables it made
 * (`freshTable`, test/support/awsLocal.ts) are deleted, so that DynamoDB Local's background jobs,
 * which read every table's schema a few times a second, do not slow the rest of the run (decision
 * 0303). Nothing is imported here: a file that never made a table pays for no SDK.
 */
afterAll(async () => {
  const drop = (globalThis as { [key: symbol]: (() => Promise<void>) | undefined })[
    Symbol.for('postdate.test.dropTables')
  ];
  await drop?.();
});
