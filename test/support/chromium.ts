/**
 * A headless Chromium for the tests that look at a page as a developer sees it, on any Linux machine
 * with Node.js, without a download from a browser CDN (the README promises `npm test` on a fresh
 * machine with Node.js and Java; the registry is the one source these machines reach).
 *
 * The machine's own Chromium comes first: CHROMIUM_PATH, or where Debian and others install it (CI
 * installs Debian's, .ci/run). Without one, the devDependency `@sparticuz/chromium` (MIT), whose npm
 * package carries a brotli-compressed Chromium for Linux x64 and arm64 and the NSS, NSPR and Expat
 * libraries it links beyond glibc (built for Amazon Linux 2023): the browser and those libraries are
 * unpacked into the temporary directory on first use, and the browser is started with
 * LD_LIBRARY_PATH pointing at them, so no system package is needed. Nothing else in the process sees
 * that variable.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';

/** The machine's Chromium: CHROMIUM_PATH, or a usual install path. */
function systemChromium(): string | undefined {
  const candidates = [
    process.env.CHROMIUM_PATH,
    '/usr/bin/chromium',
    '/usr/bin/chromium-browser',
    '/usr/bin/google-chrome',
    '/usr/bin/google-chrome-stable',
  ];
  return candidates.find((path): path is string => path !== undefined && path !== '' && existsSync(path));
}

export interface Launchable {
  readonly executablePath: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Where the browser came from, for a test's title and a failure's message. */
  readonly source: string;
}

/** The npm package's Chromium, unpacked with the libraries it needs. */
export async function packagedChromium(): Promise<Launchable> {
  if (process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'arm64'))
    throw new Error(
      `no Chromium found and @sparticuz/chromium has none for ${process.platform}/${process.arch}: ` +
        'install Chromium, or set CHROMIUM_PATH to its binary',
    );
  const { default: Chromium, inflate } = await import('@sparticuz/chromium');
  // The package's own binaries sit in its bin/, next to build/ (its entry point).
  const bin = join(dirname(createRequire(import.meta.url).resolve('@sparticuz/chromium')), '..', 'bin');
  const executablePath = await Chromium.executablePath(bin);
  // It unpacks these libraries itself only inside Lambda (Amazon Linux 2023); here we ask for them.
  const libraries = join(await inflate(join(bin, 'al2023.tar.br')), 'lib');
  const inherited = process.env.LD_LIBRARY_PATH;
  return {
    executablePath,
    args: Chromium.args,
    env: { LD_LIBRARY_PATH: inherited ? `${libraries}:${inherited}` : libraries },
    source: '@sparticuz/chromium',
  };
}

/**
 * Unpacks the npm package's Chromium ahead of the test files (test/support/globalSetup.ts): its
 * unpacking writes fixed paths in the temporary directory, which two files doing it at once would
 * corrupt. A failure here is left to the test that launches it, which reports it with its cause.
 */
export async function unpackPackagedChromium(): Promise<void> {
  await packagedChromium().catch(() => undefined);
}

async function findChromium(): Promise<Launchable> {
  const system = systemChromium();
  if (system !== undefined)
    return { executablePath: system, args: ['--no-sandbox'], env: {}, source: system };
  return packagedChromium();
}

/** Starts a headless Chromium: the machine's if it has one, else the one the npm package carries. */
export async function launchChromium(found?: Launchable): Promise<Browser> {
  found ??= await findChromium();
  try {
    return await chromium.launch({
      executablePath: found.executablePath,
      args: [...found.args],
      env: { ...process.env, ...found.env },
      headless: true,
    });
  } catch (error) {
    throw new Error(`Chromium from ${found.source} did not start (set CHROMIUM_PATH to another binary)`, {
      cause: error,
    });
  }
}
