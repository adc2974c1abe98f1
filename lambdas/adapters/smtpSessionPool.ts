import type SMTPConnection from 'nodemailer/lib/smtp-connection';

/**
 * The SMTP sessions of one warm container (DESIGN §5, "Pooled sessions"): at most `maxSessions`
 * open at once, each reused for at most `maxMessages` messages and `maxAgeMs`, and closed with QUIT.
 *
 * nodemailer's own pool reuses a session after a 4xx (RSET, then the next message) and closes one
 * without QUIT; a relay that applies a reloaded policy to new sessions only (Postfix) then keeps
 * refusing, and counts every refusal against that session. Here a transient refusal retires every
 * session opened before it ({@link renew}): the retry goes out on a session opened afterwards.
 */

export interface SessionLimits {
  /** Sessions open (or opening) at once; more senders wait for one. */
  readonly maxSessions: number;
  /** Messages one session carries before it is closed (POSTDATE_SMTP_SESSION_MAX_MESSAGES). */
  readonly maxMessages: number;
  /** How long a session is reused after it opened (POSTDATE_SMTP_SESSION_MAX_AGE_SECONDS). */
  readonly maxAgeMs: number;
}

/** One logged-in SMTP session. */
export interface SmtpSession {
  /** The pool it belongs to: it goes back there, even after the mailer replaced its pool. */
  readonly pool: SmtpSessionPool;
  readonly connection: SMTPConnection;
  readonly openedAt: number;
  /** The pool's generation when it began to open; sessions of an older one are not reused. */
  readonly generation: number;
  /** Messages handed to it so far (sent or refused). */
  messages: number;
  /** The socket ended or failed: never reused. */
  broken: boolean;
  /** Closed (or closing) and no longer counted against `maxSessions`. */
  finished: boolean;
}

/** How long QUIT may wait for the server's 221 before the socket is closed anyway. */
export const QUIT_WAIT_MS = 2000;

export class SmtpSessionPool {
  private readonly idle: SmtpSession[] = [];
  private readonly waiters: (() => void)[] = [];
  private counted = 0;
  private generation = 0;
  private closed = false;

  constructor(
    private readonly limits: SessionLimits,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * A session to send one message on: an idle one that may still be reused, or a new one opened
   * with `open` (connect, greeting, TLS, login). Rejects when `signal` aborts first; a session that
   * finishes opening after that is closed.
   */
  async acquire(signal: AbortSignal, open: () => Promise<SMTPConnection>): Promise<SmtpSession> {
    for (;;) {
      if (this.closed)
        throw Object.assign(new Error('the SMTP sessions were closed'), {
          code: 'ECONNECTION',
          command: 'CONN',
        });
      if (signal.aborted) throw signal.reason;
      const session = this.takeIdle();
      if (session !== undefined) return session;
      if (this.counted < this.limits.maxSessions) return this.create(signal, open);
      await this.slotFreed(signal);
    }
  }

  /** Gives a session back after a message: kept for the next one when `reuse` and its limits allow. */
  release(session: SmtpSession, reuse: boolean): void {
    if (session.finished) return;
    if (reuse && !this.closed && this.reusable(session)) {
      this.idle.push(session);
      this.wake();
      return;
    }
    this.quit(session);
  }

  /** Closes a session without QUIT: it is broken, or in the middle of a transaction we gave up on. */
  discard(session: SmtpSession): void {
    if (session.finished) return;
    session.broken = true;
    session.connection.close();
    this.finish(session);
  }

  /**
   * After a transient refusal: no session opened before now is used again (the idle ones say QUIT
   * now, the busy ones when they come back), so a retry meets the relay's current policy.
   */
  renew(): void {
    this.generation += 1;
    for (const session of this.idle.splice(0)) this.quit(session);
  }

  /** QUIT on every idle session; busy ones say QUIT when they come back. */
  close(): void {
    this.closed = true;
    for (const session of this.idle.splice(0)) this.quit(session);
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  /** Sessions open or opening (for tests and logs). */
  get size(): number {
    return this.counted;
  }

  private reusable(session: SmtpSession): boolean {
    return (
      !session.broken &&
      session.generation === this.generation &&
      session.messages < this.limits.maxMessages &&
      this.now() - session.openedAt < this.limits.maxAgeMs
    );
  }

  private takeIdle(): SmtpSession | undefined {
    for (let session = this.idle.pop(); session !== undefined; session = this.idle.pop()) {
      if (this.reusable(session)) return session;
      this.quit(session);
    }
    return undefined;
  }

  private async create(signal: AbortSignal, open: () => Promise<SMTPConnection>): Promise<SmtpSession> {
    this.counted += 1;
    const generation = this.generation;
    const opening = open().then(
      (connection) => this.track(connection, generation),
      (error: unknown) => {
        this.counted -= 1;
        this.wake();
        throw error;
      },
    );
    try {
      return await untilAborted(opening, signal);
    } catch (error) {
      // Given up on while opening: close it once it is open, so it does not hold a slot.
      if (signal.aborted)
        opening.then(
          (late) => this.discard(late),
          () => {},
        );
      throw error;
    }
  }

  private track(connection: SMTPConnection, generation: number): SmtpSession {
    const session: SmtpSession = {
      pool: this,
      connection,
      openedAt: this.now(),
      generation,
      messages: 0,
      broken: false,
      finished: false,
    };
    // The send's callback reports a failure during a send; these only mark the session unusable.
    connection.on('error', () => {
      session.broken = true;
    });
    connection.once('end', () => {
      session.broken = true;
      this.finish(session);
    });
    return session;
  }

  private quit(session: SmtpSession): void {
    if (session.finished) return;
    this.finish(session);
    if (session.broken) {
      session.connection.close();
      return;
    }
    session.connection.quit();
    // A server that never answers QUIT does not keep the socket open.
    setTimeout(() => session.connection.close(), QUIT_WAIT_MS).unref();
  }

  private finish(session: SmtpSession): void {
    if (session.finished) return;
    session.finished = true;
    this.counted -= 1;
    const at = this.idle.indexOf(session);
    if (at >= 0) this.idle.splice(at, 1);
    this.wake();
  }

  private slotFreed(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        reject(signal.reason);
      };
      const waiter = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      this.waiters.push(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private wake(): void {
    this.waiters.shift()?.();
  }
}

/** The promise's outcome, or a rejection as soon as the signal aborts (the promise itself runs on). */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
