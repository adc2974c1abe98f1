import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resumeWindowMs } from '../../lambdas/core/messageLifetime.js';
import { isTerminal, MESSAGE_STATUSES } from '../../lambdas/core/messageStatus.js';
import { decideReplay, needsBodyStamp, type ReplayInput } from '../../lambdas/core/replayDecision.js';

/**
 * The idempotent-replay rule (DESIGN §3, §4): a request whose id already has records is the stored
 * message's replay (200) when its fingerprint is the stored one, the key's reuse (422) otherwise; a
 * body alone is an enqueue that died between its puts (completed by the same request), a first
 * write still in flight, or past the retention an orphan a new message replaces (decision 0208).
 */
const NOW = new Date('2026-12-01T09:00:00.000Z');
const RETENTION = 30;
const ago = (ms: number) => new Date(NOW.getTime() - ms).toISOString();
const input = (overrides: Partial<ReplayInput> = {}): ReplayInput => ({
  ours: 'a',
  wroteBody: false,
  grouped: false,
  now: NOW,
  retentionDays: RETENTION,
  ...overrides,
});

const fingerprints = fc.constantFrom('a', 'b');
const statuses = fc.constantFrom(...MESSAGE_STATUSES);

describe('a state record with its fingerprint decides', () => {
  it('a replay exactly when the fingerprints are equal, whatever the status, the body or the window', () => {
    fc.assert(
      fc.property(
        fingerprints,
        fingerprints,
        statuses,
        fc.boolean(),
        fc.boolean(),
        (ours, stored, status, wroteBody, grouped) => {
          const decision = decideReplay(
            input({
              ours,
              wroteBody,
              grouped,
              state: { status, fingerprint: stored },
              body: { fingerprint: 'b', created_at: ago(0) },
            }),
          );
          expect(decision.kind).toBe(ours === stored ? 'replay' : 'key-reused');
        },
      ),
    );
  });

  it('undoes a body this request put beside an ended message, beside a record holding its body inside, or under another request', () => {
    fc.assert(
      fc.property(
        fingerprints,
        fingerprints,
        statuses,
        fc.boolean(),
        fc.boolean(),
        (ours, stored, status, wroteBody, inside) => {
          const decision = decideReplay(
            input({
              ours,
              wroteBody,
              state: { status, fingerprint: stored, ...(inside ? { body: { to: [] } } : {}) },
            }),
          );
          const readsOurBody = !isTerminal(status) && !inside && ours === stored;
          expect(decision).toEqual({
            kind: ours === stored ? 'replay' : 'key-reused',
            undoOwnBody: wroteBody && !readsOurBody,
          });
        },
      ),
    );
  });

  it('never a replay for a request that is no valid message', () => {
    fc.assert(
      fc.property(statuses, fc.option(fingerprints, { nil: undefined }), (status, stored) => {
        expect(decideReplay(input({ ours: undefined, state: { status, fingerprint: stored } })).kind).toBe(
          'key-reused',
        );
      }),
    );
  });
});

describe('a state record without a fingerprint (written before it carried one)', () => {
  it("is decided by the body's fingerprint when this request wrote no body of its own", () => {
    fc.assert(
      fc.property(fingerprints, fingerprints, statuses, (ours, stored, status) => {
        const decision = decideReplay(
          input({ ours, state: { status }, body: { fingerprint: stored, created_at: ago(0) } }),
        );
        expect(decision.kind).toBe(ours === stored ? 'replay' : 'key-reused');
      }),
    );
  });

  it('is a reuse when the body beside it is the one this request just put (its own was gone)', () => {
    expect(
      decideReplay(
        input({
          wroteBody: true,
          state: { status: 'scheduled' },
          body: { fingerprint: 'a', created_at: ago(0) },
        }),
      ),
    ).toEqual({ kind: 'key-reused', undoOwnBody: false });
    expect(decideReplay(input({ wroteBody: true, state: { status: 'sent' } }))).toEqual({
      kind: 'key-reused',
      undoOwnBody: true,
    });
  });
});

describe('no state record', () => {
  it('and no body: a first write still in flight, read again', () => {
    fc.assert(
      fc.property(
        fc.option(fingerprints, { nil: undefined }),
        fc.boolean(),
        fc.boolean(),
        (ours, wroteBody, grouped) => {
          expect(decideReplay(input({ ours, wroteBody, grouped, body: null }))).toEqual({
            kind: 'in-flight',
          });
        },
      ),
    );
  });

  it("a body of the same request is completed within the retention, if ungrouped; an older body is an orphan to replace; anything else is the key's reuse", () => {
    const window = resumeWindowMs(RETENTION);
    fc.assert(
      fc.property(
        fingerprints,
        fingerprints,
        fc.boolean(),
        fc.integer({ min: 0, max: 2 * window }),
        (ours, stored, grouped, age) => {
          const decision = decideReplay(
            input({ ours, grouped, body: { fingerprint: stored, created_at: ago(age) } }),
          );
          const completes = ours === stored && !grouped && age <= window;
          expect(decision).toEqual(
            age > window
              ? { kind: 'replace' }
              : completes
                ? { kind: 'complete' }
                : { kind: 'key-reused', undoOwnBody: false },
          );
        },
      ),
    );
  });
});

describe('the body stamp', () => {
  it('is read only when the state record is missing, or carries no fingerprint and this request put no body', () => {
    expect(needsBodyStamp({ state: null, wroteBody: true })).toBe(true);
    expect(needsBodyStamp({ state: undefined, wroteBody: false })).toBe(true);
    expect(needsBodyStamp({ state: { status: 'scheduled' }, wroteBody: false })).toBe(true);
    expect(needsBodyStamp({ state: { status: 'scheduled' }, wroteBody: true })).toBe(false);
    expect(needsBodyStamp({ state: { status: 'scheduled', fingerprint: 'a' }, wroteBody: false })).toBe(
      false,
    );
  });
});
