import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { findDynamoDbLocalPid, procStatusKb } from '../../bench/benchStack.js';
import { startDynamoDbLocal } from '../../local/dynamodbLocal.js';
import { freePort } from '../../local/freePort.js';

/**
 * The scale and soak benchmarks read DynamoDB Local's memory and CPU from /proc: they must find the
 * engine as the local stack starts it, through the loopback launcher (not `-jar DynamoDBLocal.jar`).
 */
describe('findDynamoDbLocalPid', () => {
  it("finds the engine the local stack starts, by its port, and no other port's", async () => {
    const port = await freePort();
    const db = await startDynamoDbLocal({ port });
    try {
      const pid = findDynamoDbLocalPid(port);
      expect(pid, 'the engine on its port').toBeDefined();
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      expect(args[args.indexOf('-port') + 1]).toBe(String(port));
      expect(procStatusKb(pid as number)?.VmRSS).toBeGreaterThan(0);
      expect(findDynamoDbLocalPid(await freePort())).toBeUndefined();
    } finally {
      await db.stop();
    }
  }, 60_000);
});
