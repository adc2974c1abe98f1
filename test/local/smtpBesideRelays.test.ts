import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { smtpBesideRelaysWarning } from '../../local/localEnv.js';
import { eventually } from '../support/eventually.js';
import { npmStart, ready } from './npmStartProcess.js';

/**
 * DESIGN §15: without POSTDATE_RELAYS, `SMTP_*` is the one relay, named `default`; with it, mail
 * leaves only through the relays it lists, and `SMTP_*` has no effect. An operator who set both is
 * told so when `npm start` reads its variables: one warning line naming the variables it ignores
 * (never their values: `SMTP_PASS` is a secret). A warning, not a refusal: `SMTP_*` may be there for
 * another tool of the same shell.
 */

const RELAYS = JSON.stringify([
  { name: 'primary', host: '127.0.0.1', port: 2525, secure: false, require_tls: false },
]);

/** The warning for these variables, read as `npm start` reads them. */
function warningFor(env: Record<string, string>): string | undefined {
  return smtpBesideRelaysWarning(env, loadConfig(env, 'local'));
}

describe('npm start with POSTDATE_RELAYS and SMTP_* both set', () => {
  it('warns, naming every SMTP_* variable that is set and POSTDATE_RELAYS, never a value', () => {
    const warning = warningFor({
      POSTDATE_RELAYS: RELAYS,
      SMTP_HOST: 'smtp.example.com',
      SMTP_PORT: '2587',
      SMTP_USER: 'ada',
      SMTP_PASS: 's3cret-pass',
      SMTP_SECURE: '',
    });
    expect(warning).toMatch(/POSTDATE_RELAYS/);
    for (const variable of ['SMTP_HOST', 'SMTP_PORT', 'SMTP_USER', 'SMTP_PASS']) {
      expect(warning).toContain(variable);
    }
    // Set but empty is unset, as the configuration reads it.
    expect(warning).not.toContain('SMTP_SECURE');
    for (const value of ['smtp.example.com', '2587', 'ada', 's3cret-pass']) {
      expect(warning).not.toContain(value);
    }
    expect(warning).not.toContain('\n');
  });

  it('says nothing when only one of them describes the relays', () => {
    expect(warningFor({ SMTP_HOST: 'smtp.example.com', SMTP_PORT: '2587' })).toBeUndefined();
    expect(warningFor({ POSTDATE_RELAYS: RELAYS })).toBeUndefined();
    expect(warningFor({ POSTDATE_RELAYS: RELAYS, SMTP_HOST: '  ' })).toBeUndefined();
  });

  it('`npm start` prints the warning on stderr and starts; its banner says mail leaves through POSTDATE_RELAYS', async () => {
    const start = npmStart({ POSTDATE_RELAYS: RELAYS, SMTP_HOST: 'smtp.example.com' });
    try {
      const line = await eventually(
        () => `the warning (stderr: ${start.stderr().slice(-300)})`,
        () => {
          const found = start
            .stderr()
            .split('\n')
            .find((text) => text.includes('SMTP_HOST'));
          if (found !== undefined) return found;
          if (start.child.exitCode !== null) throw new Error(`npm start ended: ${start.stderr()}`);
          return undefined;
        },
        { withinMs: 60_000, everyMs: 50 },
      );
      expect(line).toMatch(/^postdate: warning: .*SMTP_HOST.*POSTDATE_RELAYS/);
      // The banner says where mail goes as the warning does: not to SMTP_HOST.
      const banner = await ready(start);
      const viewerLine = banner.split('\n').find((text) => text.includes('Mail viewer'));
      expect(viewerLine).toContain('POSTDATE_RELAYS');
      expect(viewerLine).not.toContain('SMTP_HOST');
    } finally {
      if (start.child.pid !== undefined && start.child.exitCode === null) {
        process.kill(-start.child.pid, 'SIGTERM');
      }
      await start.exited;
    }
  }, 240_000);
});
