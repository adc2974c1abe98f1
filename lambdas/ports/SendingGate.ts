import type { SmtpErrorClassification } from '../core/classifySmtpError.js';
import type { BreakerState, PauseEntry, PauseState, SendingGateState } from '../core/relayBreaker.js';

/**
 * The sending gate's one item in the table (core/relayBreaker.ts): the relay circuit breaker every
 * sender shares, and the operator's pauses. Every write is conditional on the version read: a write
 * that lost comes back as `conflict`, never as an exception. The DynamoDB adapter is
 * store/sendingGate.ts.
 */
export interface SendingGateStore {
  /** The gate as stored (never written: closed and nothing paused), read consistently now. */
  read(): Promise<SendingGateState>;
  /**
   * The gate from a consistent read at most `maxAgeMs` old, which the gates of the sender's other
   * relays may share (one read of the table for all of them), and how old that read is.
   */
  readRecent(maxAgeMs: number): Promise<{ readonly gate: SendingGateState; readonly ageMs: number }>;
  /** Writes `next` only while the breaker is still at `observed.version`. */
  writeBreaker(observed: BreakerState, next: BreakerState): Promise<'written' | 'conflict'>;
  /** Writes `next` only while the pauses are still at `observed.version`. */
  writePause(observed: PauseState, next: PauseState): Promise<'written' | 'conflict'>;
  /** Disables this relay (DESIGN §15: the copies go to the next one), or enables it (undefined). */
  setDisabled(entry: PauseEntry | undefined): Promise<void>;
}

/** One probe of the relay: a session opened up to its login and closed with QUIT; no message. */
export type ProbeResult =
  | { readonly ok: true; readonly durationMs: number }
  | { readonly ok: false; readonly failure: SmtpErrorClassification; readonly durationMs: number };

export interface RelayProbe {
  /** Never throws: every failure comes back classified. */
  probe(): Promise<ProbeResult>;
}
