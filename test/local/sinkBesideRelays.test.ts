import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { freePort } from '../../local/freePort.js';
import { startsLocalSink } from '../../local/localEnv.js';
import { refusedPort } from '../support/refusedPort.js';
import { type NpmStart, npmStart, ready } from './npmStartProcess.js';

/**
 * DESIGN §7: the local stack runs an SMTP sink with a viewer (MailDev under `npm start`) "unless
 * `SMTP_HOST` points at a real relay"; DESIGN §15: with POSTDATE_RELAYS, mail leaves only through
 * the relays it lists. So with POSTDATE_RELAYS naming relays elsewhere, no sink starts (it would cost
 * start-up time and a port, and the banner's viewer would show mail that never goes there), unless
 * one of the relays is the sink itself: 127.0.0.1 (or localhost) on the sink's port.
 */

const SINK_PORT = 1025;

function relays(...at: readonly [host: string, port: number][]): string {
  return JSON.stringify(
    at.map(([host, port], index) => ({ name: `r${index}`, host, port, secure: false, require_tls: false })),
  );
}

/** Whether a sink starts for these variables, read as `npm start` reads them. */
function sinkFor(env: Record<string, string>, sinkPort = SINK_PORT): boolean {
  return startsLocalSink(loadConfig(env, 'local'), sinkPort);
}

describe('whether the local stack starts its own SMTP sink', () => {
  it('starts it with neither SMTP_HOST nor POSTDATE_RELAYS, and not when SMTP_HOST names the relay', () => {
    expect(sinkFor({})).toBe(true);
    expect(sinkFor({ SMTP_HOST: 'smtp.example.com' })).toBe(false);
  });

  it('does not start it when every relay of POSTDATE_RELAYS is elsewhere', () => {
    expect(sinkFor({ POSTDATE_RELAYS: relays(['smtp.example.com', 587]) })).toBe(false);
    expect(sinkFor({ POSTDATE_RELAYS: relays(['email-smtp.eu-west-1.amazonaws.com', 465]) })).toBe(false);
    // Another server on this machine (the user's own), not on the sink's port.
    expect(sinkFor({ POSTDATE_RELAYS: relays(['127.0.0.1', 2525]) })).toBe(false);
    // The sink on any free port: no relay can have named it.
    expect(sinkFor({ POSTDATE_RELAYS: relays(['127.0.0.1', SINK_PORT]) }, 0)).toBe(false);
  });

  it('starts it when one of the relays is the sink itself, wherever it is in the list', () => {
    expect(sinkFor({ POSTDATE_RELAYS: relays(['127.0.0.1', SINK_PORT]) })).toBe(true);
    expect(sinkFor({ POSTDATE_RELAYS: relays(['smtp.example.com', 587], ['localhost', SINK_PORT]) })).toBe(
      true,
    );
    // SMTP_HOST beside POSTDATE_RELAYS has no effect (decision 0226), here as for the functions.
    expect(
      sinkFor({ POSTDATE_RELAYS: relays(['127.0.0.1', SINK_PORT]), SMTP_HOST: 'smtp.example.com' }),
    ).toBe(true);
  });
});

/** The banner of `start`, once it is printed; the start is stopped then. */
async function bannerOf(start: NpmStart): Promise<string> {
  try {
    return await ready(start);
  } finally {
    if (start.child.pid !== undefined && start.child.exitCode === null)
      process.kill(-start.child.pid, 'SIGTERM');
    await start.exited;
  }
}

describe('npm start with POSTDATE_RELAYS and no SMTP_HOST', () => {
  it('starts no MailDev and no sink when the relays are elsewhere; the banner says where mail goes', async () => {
    // A relay elsewhere, down: a port no part of this start (or of the run) can draw.
    const banner = await bannerOf(npmStart({ POSTDATE_RELAYS: relays(['127.0.0.1', await refusedPort()]) }));
    expect(banner).not.toMatch(/MailDev/);
    expect(banner).not.toMatch(/SMTP sink/);
    const viewerLine = banner.split('\n').find((line) => line.includes('Mail viewer'));
    expect(viewerLine).toMatch(/none: mail leaves through the relays of POSTDATE_RELAYS/);
  }, 240_000);

  it('starts MailDev when a relay is MailDev itself, on POSTDATE_SMTP_SINK_PORT', async () => {
    const port = await freePort();
    const banner = await bannerOf(
      npmStart({ POSTDATE_RELAYS: relays(['127.0.0.1', port]), POSTDATE_SMTP_SINK_PORT: String(port) }),
    );
    expect(banner).toMatch(/ {2}up {2}MailDev/);
    expect(banner).toContain(`SMTP sink    127.0.0.1:${port}   (MailDev's; a relay of POSTDATE_RELAYS)`);
    expect(banner.split('\n').find((line) => line.includes('Mail viewer'))).toMatch(/MailDev/);
  }, 240_000);
});
