/**
 * A temp dir a part owns (the S3 emulator's objects, MailDev's mail when no `POSTDATE_DATA_DIR`):
 * removed at the part's stop, or at this process's exit, whichever comes first, so that a stop that
 * does not wait for the parts (Ctrl-C before the banner, a second Ctrl-C, the stop deadline) leaves
 * none behind (DESIGN §7). Only a SIGKILL can.
 */
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface OwnTempDir {
  readonly path: string;
  remove(): Promise<void>;
}

export async function ownTempDir(prefix: string): Promise<OwnTempDir> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  const atExit = () => rmSync(path, { recursive: true, force: true });
  process.once('exit', atExit);
  return {
    path,
    async remove() {
      process.off('exit', atExit);
      await rm(path, { recursive: true, force: true });
    },
  };
}
