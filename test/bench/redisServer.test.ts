import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { peerLabel } from '../../bench/bullmqPeer.js';
import { findExecutable, parseRedisInfo } from '../../bench/redisServer.js';

describe('parseRedisInfo', () => {
  it('reads the key:value lines and leaves the section headers out', () => {
    const info = '# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\nos:Linux 6.1 x86_64\r\n\r\n';
    const fields = parseRedisInfo(info);
    expect(fields.get('redis_version')).toBe('7.0.15');
    expect(fields.get('os')).toBe('Linux 6.1 x86_64');
    expect(fields.has('# Server')).toBe(false);
    expect(fields.size).toBe(3);
  });
});

describe('findExecutable', () => {
  const root = mkdtempSync(join(tmpdir(), 'postdate-find-executable-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('finds the first executable of that name on the PATH, skipping empty entries and dirs without it', () => {
    const binDir = mkdtempSync(join(root, 'bin-'));
    const tool = join(binDir, 'redis-server');
    writeFileSync(tool, '#!/bin/sh\n');
    chmodSync(tool, 0o755);
    expect(findExecutable('redis-server', ['', root, binDir].join(delimiter))).toBe(tool);
  });

  it('is undefined when it is absent or not executable', () => {
    const dir = mkdtempSync(join(root, 'plain-'));
    writeFileSync(join(dir, 'redis-server'), '');
    chmodSync(join(dir, 'redis-server'), 0o644);
    expect(findExecutable('redis-server', dir)).toBeUndefined();
    expect(findExecutable('redis-server', '')).toBeUndefined();
  });
});

describe('peerLabel', () => {
  it('names the peer with the versions read in the run', () => {
    expect(peerLabel({ bullmq: '6.7.0', redis: '7.0.15' })).toBe('BullMQ 6.7.0 on Redis 7.0.15');
  });
});
