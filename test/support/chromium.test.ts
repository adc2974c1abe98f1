import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { launchChromium, packagedChromium } from './chromium.js';

/**
 * The fallback browser of test/support/chromium.ts, proven on every machine, CI included (where
 * Debian's Chromium is found first and the fallback would otherwise never run): it needs nothing
 * from the system but glibc, and it shows a page.
 */
describe.runIf(process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64'))(
  "the npm package's Chromium",
  () => {
    it('links nothing from the system but glibc and libgcc: NSS, NSPR and Expat come unpacked with it', async () => {
      const chromium = await packagedChromium();
      const libraries = chromium.env.LD_LIBRARY_PATH?.split(':')[0] ?? '';
      const ldd = execFileSync('ldd', [chromium.executablePath], {
        env: { ...process.env, ...chromium.env },
        encoding: 'utf8',
      });
      const resolved = ldd
        .split('\n')
        .map((line) => /^\s*(\S+) => (\S+)/.exec(line))
        .filter((match): match is RegExpExecArray => match !== null)
        .map(([, name = '', path = '']) => ({ name, path }));
      expect(resolved.length).toBeGreaterThan(0);
      const glibcOrGcc = /^(libc|libm|libdl|libpthread|librt|libgcc_s|ld-linux[^.]*)\.so/;
      const fromSystem = resolved.filter(
        ({ name, path }) => !path.startsWith(libraries) && !glibcOrGcc.test(name),
      );
      expect(fromSystem).toEqual([]);
      expect(resolved.map(({ name }) => name)).toEqual(expect.arrayContaining(['libnss3.so', 'libnspr4.so']));
    }, 120_000);

    it('opens a page and reads it', async () => {
      const browser = await launchChromium(await packagedChromium());
      try {
        const page = await browser.newPage();
        await page.setContent('<main><h1 id="title">Shipped</h1></main>');
        expect(await page.textContent('#title')).toBe('Shipped');
      } finally {
        await browser.close();
      }
    }, 120_000);
  },
);
