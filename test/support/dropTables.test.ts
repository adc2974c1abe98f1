import { DeleteTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { createOutboxTable } from '../../local/createResources.js';
import config from '../../vitest.config.js';
import { dynamodbClient, freshTable, uniqueName } from './awsLocal.js';

/** What dropTables.ts calls after each test file: the process's tables made since the last file. */
const dropTables = () =>
  (globalThis as { [key: symbol]: (() => Promise<void>) | undefined })[
    Symbol.for('postdate.test.dropTables')
  ]?.();

async function exists(tableName: string): Promise<boolean> {
  try {
    await dynamodbClient().send(new DescribeTableCommand({ TableName: tableName }));
    return true;
  } catch (error) {
    if ((error as Error).name === 'ResourceNotFoundException') return false;
    throw error;
  }
}

describe("a test file's tables (decision 0303)", () => {
  it('are deleted by the drop after the file, and only they', async () => {
    const notFresh = uniqueName('not-fresh');
    await createOutboxTable(dynamodbClient(), notFresh);
    const made = await Promise.all([freshTable('drop'), freshTable('drop')]);
    expect(await Promise.all(made.map(({ tableName }) => exists(tableName)))).toEqual([true, true]);
    await dropTables();
    expect(await Promise.all(made.map(({ tableName }) => exists(tableName)))).toEqual([false, false]);
    // A table made otherwise (as another process's would be) is not the drop's.
    expect(await exists(notFresh)).toBe(true);
    await dynamodbClient().send(new DeleteTableCommand({ TableName: notFresh }));
    // A second drop has nothing left to delete.
    await expect(dropTables()).resolves.toBeUndefined();
  });

  it('are dropped after every file of each project on the emulators', () => {
    const projects = (config.test?.projects ?? []) as {
      test?: { name?: string; globalSetup?: unknown; setupFiles?: unknown };
    }[];
    const onEmulators = projects.filter((project) => project.test?.globalSetup !== undefined);
    expect(onEmulators.map((project) => project.test?.name)).toEqual(['shared', 'parts']);
    for (const project of onEmulators) {
      expect(project.test?.setupFiles, project.test?.name).toContain('test/support/dropTables.ts');
    }
  });
});
