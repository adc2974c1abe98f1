/**
 * What the relays of an outage benchmark received, counted from the relays' own records (each
 * SMTP sink's `X-Postdate-Id`), never from Postdate's statuses: a copy received by either relay is a
 * delivery, a second copy anywhere is doubled (docs/design.md §15 Failover across relays: a
 * recipient one relay accepted is never sent again through another).
 */
export interface ReceivedAtRelay {
  readonly postdateId: string | null;
  /** ISO time the relay received it. */
  readonly receivedAt: string;
}

export interface RelayReceipts {
  /** Expected, received by no relay. */
  readonly lost: number;
  /** Expected, received more than once in all (at one relay or across relays). */
  readonly doubled: number;
  /** Expected, received by more than one relay. */
  readonly atTwoRelays: number;
  /** Expected messages each relay received (every copy counted). */
  readonly perRelay: Readonly<Record<string, number>>;
  /** Each received id's first receipt at any relay (epoch ms). */
  readonly firstReceiptMs: ReadonlyMap<string, number>;
  /** Each received id's relay of first receipt. */
  readonly firstRelay: ReadonlyMap<string, string>;
}

export function relayReceipts(
  ids: readonly string[],
  relays: Readonly<Record<string, readonly ReceivedAtRelay[]>>,
): RelayReceipts {
  const wanted = new Set(ids);
  const copies = new Map<string, number>();
  const relaysOf = new Map<string, Set<string>>();
  const firstReceiptMs = new Map<string, number>();
  const firstRelay = new Map<string, string>();
  const perRelay: Record<string, number> = {};
  for (const [relay, mails] of Object.entries(relays)) {
    perRelay[relay] = 0;
    for (const mail of mails) {
      const id = mail.postdateId;
      if (id === null || !wanted.has(id)) continue;
      perRelay[relay] = (perRelay[relay] ?? 0) + 1;
      copies.set(id, (copies.get(id) ?? 0) + 1);
      relaysOf.set(id, (relaysOf.get(id) ?? new Set()).add(relay));
      const ms = Date.parse(mail.receivedAt);
      const first = firstReceiptMs.get(id);
      if (first === undefined || ms < first) {
        firstReceiptMs.set(id, ms);
        firstRelay.set(id, relay);
      }
    }
  }
  return {
    lost: ids.filter((id) => !copies.has(id)).length,
    doubled: [...copies.values()].filter((n) => n > 1).length,
    atTwoRelays: [...relaysOf.values()].filter((set) => set.size > 1).length,
    perRelay,
    firstReceiptMs,
    firstRelay,
  };
}

/**
 * The most connection attempts that fall in any half-open window `[t, t + intervalMs)`: 1 when
 * they are at least one probe interval apart (RFC 5321 §4.5.4.1, docs/design.md §5 "An outage is
 * not the message's fault").
 */
export function mostInAnyInterval(timesMs: readonly number[], intervalMs: number): number {
  const sorted = [...timesMs].sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let last = 0; last < sorted.length; last++) {
    while ((sorted[last] ?? 0) - (sorted[first] ?? 0) >= intervalMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}
