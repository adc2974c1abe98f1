import nodemailer from 'nodemailer';
import { classifySmtpError } from '../core/classifySmtpError.js';
import type { ProbeResult, RelayProbe } from '../ports/SendingGate.js';
import { DEFAULT_SMTP_TIMEOUTS, type NodemailerMailerOptions } from './NodemailerMailer.js';

export type RelayProbeOptions = Pick<
  NodemailerMailerOptions,
  'host' | 'port' | 'secure' | 'requireTls' | 'credentials' | 'timeouts'
>;

/**
 * The breaker's probe (core/relayBreaker.ts): nodemailer's `verify()` on a connection of its own —
 * connect, greeting, EHLO, STARTTLS when required, the login, then QUIT. It tests exactly the steps
 * where the failures that open the breaker happen, costs no message an attempt, needs no message at
 * hand (the probe token carries none), and never borrows a pooled session that an outage left broken.
 */
export class NodemailerRelayProbe implements RelayProbe {
  constructor(
    private readonly options: RelayProbeOptions,
    private readonly clock: () => number = Date.now,
  ) {}

  async probe(): Promise<ProbeResult> {
    const started = this.clock();
    const timeouts = { ...DEFAULT_SMTP_TIMEOUTS, ...this.options.timeouts };
    let transporter: ReturnType<typeof nodemailer.createTransport> | undefined;
    try {
      const credentials = await this.options.credentials.get();
      transporter = nodemailer.createTransport({
        host: this.options.host,
        port: this.options.port,
        secure: this.options.secure,
        requireTLS: !this.options.secure && this.options.requireTls,
        auth: credentials ? { user: credentials.username, pass: credentials.password } : undefined,
        connectionTimeout: timeouts.connectionMs,
        greetingTimeout: timeouts.greetingMs,
        socketTimeout: timeouts.preDotMs,
        dnsTimeout: timeouts.dnsMs,
        logger: false,
        debug: false,
      });
      await transporter.verify();
      return { ok: true, durationMs: this.clock() - started };
    } catch (error) {
      const failure = classifySmtpError(error);
      // A refused login may be a rotated secret: the next probe reads it again.
      if (failure.class === 'config') this.options.credentials.invalidate();
      return { ok: false, failure, durationMs: this.clock() - started };
    } finally {
      transporter?.close();
    }
  }
}
