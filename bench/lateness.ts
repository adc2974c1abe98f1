import type { MailTarget } from './mailTarget.js';

/**
 * Lateness = the SMTP sink's receive time − the message's due time, measured the same way for
 * Postdate (bench/precision.ts, bench/peer.ts) and for a peer queue (bench/peer.ts): each case is a
 * stream of messages enqueued STAGGER_MS apart with the case's delay, the cases interleaved.
 */

/**
 * Consecutive messages of one case are enqueued this far apart, so a case is a stream, not one
 * burst: with five cases that is five messages a second, well inside what the local stack drains
 * (bench/scale.ts), so the lateness is the path's, not a backlog's.
 */
export const STAGGER_MS = 1000;
/** The cases' streams are offset from each other by this much. */
export const CASE_OFFSET_MS = 197;
/** Time to set every enqueue timer before the first one fires. */
const SETUP_MS = 3000;

export interface PathCase {
  readonly name: string;
  readonly delaySeconds: number;
  readonly path: string;
  /**
   * Given as `send_at_local` in this zone instead of `delay_seconds` (docs/design.md §16): the due
   * time is the next whole second at least `delaySeconds` away, on the zone's wall clock.
   */
  readonly timeZone?: string;
}

/** Far from UTC and not on the hour (+05:30), so the conversion is visibly at work. */
const LOCAL_TIME_ZONE = 'Asia/Kolkata';

/**
 * The `send_at_local` path (issue 33) beside the others, for Postdate only (a peer has no local
 * time): the same two dispatch paths as `5 s` and `> 15 min`, the time given as a wall clock.
 */
export function localTimeCases(setup: Pick<PrecisionSetup, 'directMax' | 'lead'>): PathCase[] {
  return [
    {
      name: 'send_at_local 5 s',
      delaySeconds: 5,
      path: `send_at_local in ${LOCAL_TIME_ZONE}, SQS DelaySeconds`,
      timeZone: LOCAL_TIME_ZONE,
    },
    {
      name: `send_at_local > 15 min (${setup.directMax + 10} s)`,
      delaySeconds: setup.directMax + 10,
      path: `send_at_local in ${LOCAL_TIME_ZONE}, Scheduler at send_at − ${setup.lead} s, then SQS`,
      timeZone: LOCAL_TIME_ZONE,
    },
  ];
}

export interface PrecisionSetup {
  readonly perCase: number;
  /** POSTDATE_DIRECT_DELAY_MAX_SECONDS, compressed. */
  readonly directMax: number;
  /** POSTDATE_SCHEDULE_LEAD_SECONDS, compressed. */
  readonly lead: number;
  readonly cases: readonly PathCase[];
  /** The environment the local stack starts with so that every path runs in seconds. */
  readonly env: Readonly<Record<string, string>>;
}

/**
 * Postdate's dispatch paths with the production thresholds (15 min direct to SQS, 90 s schedule
 * lead) scaled down through the same variables the Lambdas read: "14 min" becomes D − 1 s (the
 * longest direct SQS delay), "> 15 min" becomes D + 10 s (EventBridge Scheduler at send_at − L,
 * then the exact remaining SQS delay and the in-process sub-second wait).
 */
export function precisionSetup(quick: boolean): PrecisionSetup {
  const perCase = quick ? 8 : 30;
  const directMax = quick ? 12 : 70;
  const lead = quick ? 3 : 5;
  const cases: PathCase[] = [
    { name: '0 s', delaySeconds: 0, path: 'SQS, no delay' },
    { name: '5 s', delaySeconds: 5, path: 'SQS DelaySeconds' },
    ...(quick ? [] : [{ name: '60 s', delaySeconds: 60, path: 'SQS DelaySeconds' }]),
    {
      name: `14 min (compressed: ${directMax - 1} s)`,
      delaySeconds: directMax - 1,
      path: 'SQS DelaySeconds, longest direct delay',
    },
    {
      name: `> 15 min (compressed: ${directMax + 10} s)`,
      delaySeconds: directMax + 10,
      path: `Scheduler at send_at − ${lead} s, then SQS`,
    },
  ];
  return {
    perCase,
    directMax,
    lead,
    cases,
    env: {
      POSTDATE_DIRECT_DELAY_MAX_SECONDS: String(directMax),
      POSTDATE_SCHEDULE_LEAD_SECONDS: String(lead),
    },
  };
}

export interface PlannedSubmit {
  readonly caseIndex: number;
  readonly delaySeconds: number;
  /** Epoch ms at which this message is enqueued. */
  readonly enqueueAt: number;
}

/**
 * When each message is enqueued: `perCase` messages per delay, STAGGER_MS apart within a case,
 * the cases offset by CASE_OFFSET_MS, all from `base`.
 */
export function staggeredPlan(
  delaysSeconds: readonly number[],
  perCase: number,
  base: number,
  staggerMs = STAGGER_MS,
  offsetMs = CASE_OFFSET_MS,
): PlannedSubmit[] {
  return delaysSeconds.flatMap((delaySeconds, caseIndex) =>
    Array.from({ length: perCase }, (_, i) => ({
      caseIndex,
      delaySeconds,
      enqueueAt: base + i * staggerMs + caseIndex * offsetMs,
    })),
  );
}

export interface LatenessRun {
  /** Lateness in ms of every message, per case (in the order of the delays given). */
  readonly perCase: readonly (readonly number[])[];
  /**
   * The baseline: lateness of a bare `setTimeout` armed in the same process for the due time of
   * every delayed message (what the event loop alone adds on this machine).
   */
  readonly timer: readonly number[];
}

/** Runs the staggered plan against `target` and measures each message's lateness at the sink. */
export async function measureLateness(
  target: MailTarget,
  settings: {
    readonly delaysSeconds: readonly number[];
    /** Per case, the zone of a case given as `send_at_local` (PathCase.timeZone); none: delay_seconds. */
    readonly timeZones?: readonly (string | undefined)[];
    readonly perCase: number;
    readonly bodyBytes: number;
    /** Called once the target's warm-up is done, before the first measured message. */
    readonly warmedUp?: () => void;
  },
): Promise<LatenessRun> {
  const { delaysSeconds, perCase, bodyBytes } = settings;
  await target.warm();
  settings.warmedUp?.();
  const plan = staggeredPlan(delaysSeconds, perCase, Date.now() + SETUP_MS);
  const timer: number[] = [];
  const timers: NodeJS.Timeout[] = [];
  const armBaseline = (dueAt: number) => {
    timers.push(setTimeout(() => timer.push(Date.now() - dueAt), Math.max(0, dueAt - Date.now())));
  };
  const submitted = await Promise.all(
    plan.map(
      (item) =>
        new Promise<{ caseIndex: number; key: string; dueAt: number }>((resolve, reject) => {
          setTimeout(
            () => {
              const timeZone = settings.timeZones?.[item.caseIndex];
              const submit = { bodyBytes, delaySeconds: item.delaySeconds };
              target.submit(timeZone === undefined ? submit : { ...submit, timeZone }).then((message) => {
                if (item.delaySeconds > 0) armBaseline(message.dueAt);
                resolve({ caseIndex: item.caseIndex, ...message });
              }, reject);
            },
            Math.max(0, item.enqueueAt - Date.now()),
          );
        }),
    ),
  );
  const longest = Math.max(...delaysSeconds);
  const received = await target.received(
    submitted.map((m) => m.key),
    SETUP_MS + longest * 1000 + perCase * STAGGER_MS + 120_000,
  );
  for (const pending of timers) clearTimeout(pending);
  return {
    perCase: delaysSeconds.map((_, caseIndex) =>
      submitted
        .filter((m) => m.caseIndex === caseIndex)
        .map((m) => (received.get(m.key)?.getTime() ?? Number.NaN) - m.dueAt),
    ),
    timer,
  };
}
