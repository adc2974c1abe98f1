import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { describe, expect, it } from 'vitest';
import { startDynamoDbLocal } from '../../local/dynamodbLocal.js';
import { freePort } from '../../local/freePort.js';

/**
 * Issue 17 §4: DynamoDB Local accepts any credentials, so it must listen on loopback only, like every
 * other part of the local stack (docs/local-stack.md). Its own options cannot say so; the launcher does.
 */
function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** This machine's own addresses that are not loopback (where a listener on every interface answers). */
const outwardAddresses = Object.values(networkInterfaces())
  .flat()
  .filter((address) => address !== undefined && !address.internal && address.family === 'IPv4')
  .map((address) => address?.address as string);

describe('DynamoDB Local in the local stack', () => {
  it('answers on 127.0.0.1 and nowhere else', async () => {
    const db = await startDynamoDbLocal({ port: await freePort() });
    try {
      expect(db.listensOn).toBe('loopback');
      expect(await reachable('127.0.0.1', db.port)).toBe(true);
      for (const address of outwardAddresses) expect(await reachable(address, db.port)).toBe(false);
    } finally {
      await db.stop();
    }
  }, 60_000);
});
