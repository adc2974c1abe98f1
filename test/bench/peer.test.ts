import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { peer } from '../../bench/peer.js';

describe('peer benchmark', () => {
  it('is skipped with one line saying how to install redis-server when it is not on the PATH', async () => {
    const emptyDir = mkdtempSync(join(tmpdir(), 'postdate-no-redis-'));
    const path = process.env.PATH;
    process.env.PATH = emptyDir;
    const lines: string[] = [];
    try {
      const result = await peer({ quick: true, log: (line) => lines.push(line) });
      expect(result.name).toBe('peer');
      expect(result.rows).toEqual([]);
    } finally {
      process.env.PATH = path;
      rmSync(emptyDir, { recursive: true, force: true });
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('redis-server');
    expect(lines[0]).toContain('apt-get install -y redis-server');
  });
});
