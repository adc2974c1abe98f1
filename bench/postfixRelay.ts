import { execFile } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { sleep } from './stats.js';

/**
 * A real Postfix (the Debian package, 3.7) run as a relay for a benchmark, with its own
 * `config_directory`, `queue_directory` and `data_directory` under a temp dir, so that the system's
 * Postfix configuration and queue are never read or touched: `postfix -c DIR start`. It listens on
 * 127.0.0.1:`port` only (master.cf has no other inet service), relays everything from
 * 127.0.0.0/8 to `relayhost` (the benchmark's SMTP sink), delivers nothing locally, and logs to its
 * own `maillog_file` (through postlogd), which the benchmark reads to count what Postfix saw.
 */
export interface PostfixRelay {
  readonly host: string;
  readonly port: number;
  readonly directory: string;
  /** `postfix start`; resolves once the master is up. */
  start(): Promise<void>;
  /** `postfix stop`; resolves once the port refuses connections (the master has exited). */
  stop(): Promise<void>;
  /**
   * `defer`: every new connection is answered `421 4.3.2` at the greeting and closed (an access-map
   * 421 with `smtpd_delay_reject = no`; Postfix disconnects right after a 421); `accept`: the
   * ordinary relay. Applied with `postfix reload` when running (new sessions only).
   */
  setMode(mode: 'accept' | 'defer'): Promise<void>;
  /** The maillog so far (postlogd writes asynchronously: wait a moment after the events). */
  maillog(): string;
  /** Stops Postfix if it runs and deletes the temp dir. */
  close(): Promise<void>;
}

/** Why Postfix cannot run here, or undefined when it can. */
export function postfixUnavailable(): string | undefined {
  if (!existsSync('/usr/sbin/postfix') || !existsSync('/usr/sbin/postconf')) {
    return (
      'postfix is not installed (Debian/Ubuntu: `sudo DEBIAN_FRONTEND=noninteractive apt-get install -y postfix`, ' +
      'debconf "No configuration"; the benchmark never uses the system configuration)'
    );
  }
  if (userInfo().uid !== 0)
    return '`postfix start` needs root (run the benchmark as root, e.g. in a container)';
  return undefined;
}

const MASTER_CF = (port: number) =>
  `${[
    `127.0.0.1:${port} inet n - n - - smtpd`,
    'pickup    unix n - n 60 1 pickup',
    'cleanup   unix n - n - 0 cleanup',
    'qmgr      unix n - n 300 1 qmgr',
    'rewrite   unix - - n - - trivial-rewrite',
    'bounce    unix - - n - 0 bounce',
    'defer     unix - - n - 0 bounce',
    'trace     unix - - n - 0 bounce',
    'verify    unix - - n - 1 verify',
    'flush     unix n - n 1000? 0 flush',
    'proxymap  unix - - n - - proxymap',
    'smtp      unix - - n - - smtp',
    'relay     unix - - n - - smtp',
    'showq     unix n - n - - showq',
    'error     unix - - n - - error',
    'retry     unix - - n - - error',
    'discard   unix - - n - - discard',
    'anvil     unix - - n - 1 anvil',
    'scache    unix - - n - 1 scache',
    'postlog   unix-dgram n - n - 1 postlogd',
  ].join('\n')}\n`;

const DEFER_RESTRICTION = 'check_client_access static:{421 4.3.2 Service shutting down}';

export async function startPostfixRelay(options: {
  readonly port: number;
  readonly relayHost: string;
  readonly relayPort: number;
}): Promise<PostfixRelay> {
  const directory = mkdtempSync('/tmp/postdate-postfix-');
  chmodSync(directory, 0o755);
  const etc = join(directory, 'etc');
  const data = join(directory, 'data');
  for (const dir of [etc, join(directory, 'queue'), data]) mkdirSync(dir, { recursive: true });
  const postfixUser = readPasswd('postfix');
  if (postfixUser) chownSync(data, postfixUser.uid, postfixUser.gid);
  const maillogFile = join(directory, 'maillog');
  writeFileSync(join(etc, 'master.cf'), MASTER_CF(options.port));
  writeFileSync(join(etc, 'main.cf'), '');
  await postconf(etc, [
    `queue_directory=${join(directory, 'queue')}`,
    `data_directory=${data}`,
    'compatibility_level=3.6',
    'myhostname=postfix-bench.localdomain',
    'mydestination=',
    'local_transport=error:local delivery disabled',
    'alias_maps=',
    'alias_database=',
    `relayhost=[${options.relayHost}]:${options.relayPort}`,
    'mynetworks=127.0.0.0/8',
    'inet_interfaces=127.0.0.1',
    'inet_protocols=ipv4',
    `maillog_file=${maillogFile}`,
    'maillog_file_prefixes=/var,/dev/stdout,/tmp',
    'smtp_tls_security_level=none',
    'smtpd_tls_security_level=none',
    'syslog_name=postfix-bench',
    'smtpd_delay_reject=no',
    'smtpd_client_restrictions=',
  ]);
  let running = false;
  const relay: PostfixRelay = {
    host: '127.0.0.1',
    port: options.port,
    directory,
    async start() {
      await run('/usr/sbin/postfix', ['-c', etc, 'start']);
      running = true;
    },
    async stop() {
      await run('/usr/sbin/postfix', ['-c', etc, 'stop']);
      running = false;
      const pidFile = join(directory, 'queue', 'pid', 'master.pid');
      const deadline = Date.now() + 20_000;
      while (existsSync(pidFile) && masterAlive(pidFile) && Date.now() < deadline) await sleep(50);
    },
    async setMode(mode) {
      await postconf(etc, [`smtpd_client_restrictions=${mode === 'defer' ? DEFER_RESTRICTION : ''}`]);
      if (running) await run('/usr/sbin/postfix', ['-c', etc, 'reload']);
    },
    maillog() {
      return existsSync(maillogFile) ? readFileSync(maillogFile, 'utf8') : '';
    },
    async close() {
      try {
        if (running) await relay.stop();
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
    },
  };
  return relay;
}

function postconf(etc: string, settings: readonly string[]): Promise<string> {
  return run('/usr/sbin/postconf', ['-c', etc, '-e', ...settings]);
}

/** Runs a Postfix command with a timeout (a misconfigured postlog can make `postfix` wait forever). */
function run(command: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, [...args], { timeout: 30_000, cwd: '/tmp' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')}: ${error.message} ${stderr}`.trim()));
      else resolve(stdout);
    });
  });
}

function masterAlive(pidFile: string): boolean {
  try {
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 0) return false;
    process.kill(pid, 0);
    // A zombie (the master's parent has not reaped it) still answers signal 0 but listens no more.
    const status = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \([^)]*\) Z/.test(status);
  } catch {
    return false;
  }
}

function readPasswd(name: string): { uid: number; gid: number } | undefined {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const [user, , uid, gid] = line.split(':');
      if (user === name) return { uid: Number(uid), gid: Number(gid) };
    }
  } catch {
    return undefined;
  }
  return undefined;
}
