import type { TransactionRecord } from '../local/smtp/controllableSmtpServer.js';
import type { SessionCutRecord } from '../local/smtp/relayOutage.js';
import type {
  AcceptedMessage,
  CheckInput,
  FinalView,
  KillRecord,
  SessionCut,
  SmtpTransaction,
} from './checker.js';
import type { TrackedMessage } from './client.js';
import type { TapTransaction } from './smtpTap.js';
import type { TimeoutKill } from './stackChild.js';

/**
 * The checker's input (chaos/checker.ts), from the harness's own records only: the messages the
 * client saw accepted and their final views, the SMTP tap's transactions joined with the relay's
 * fault script, the kill log (the SIGKILLs the run dealt, and the sender invocations the local
 * runners killed at their function timeout), and the sessions the relay outage cut when it began.
 */
export function checkerInput(records: {
  readonly tracked: readonly TrackedMessage[];
  readonly views: Record<string, FinalView | null>;
  readonly tapped: readonly TapTransaction[];
  readonly relayed: readonly TransactionRecord[];
  readonly dealtKills: readonly KillRecord[];
  readonly timeoutKills: readonly TimeoutKill[];
  readonly outageCuts: readonly SessionCutRecord[];
  /** The relay these taps and cuts are of, in a run with several (docs/design.md §15). */
  readonly relay?: string;
  /** The scenario's POSTDATE_MAX_ATTEMPTS. */
  readonly maxAttempts?: number;
}): CheckInput {
  const accepted: AcceptedMessage[] = records.tracked.map((message) => {
    const { to, on_ambiguous: onAmbiguous } = message.planned.body;
    return {
      id: message.id,
      idempotencyKey: message.planned.key,
      expectedFate: message.expectedFate,
      acceptedBy: message.acceptedBy,
      recipients: Array.isArray(to) ? to.map(String) : typeof to === 'string' ? [to] : [],
      onAmbiguous: onAmbiguous === 'hold' ? 'hold' : 'retry',
      sendAtMs: message.earliestSendAtMs,
    };
  });
  const relay = records.relay === undefined ? {} : { relay: records.relay };
  const transactions = joinTransactions(records.tapped, records.relayed).map((transaction) => ({
    ...relay,
    ...transaction,
  }));
  const kills: KillRecord[] = [
    // A kill's open sessions of this relay's tap, named as its transactions are.
    ...records.dealtKills.map(({ openSessions, ...kill }) =>
      openSessions === undefined
        ? kill
        : {
            ...kill,
            openSessions: openSessions
              .filter((session) => records.relay === undefined || session.relay === records.relay)
              .map(({ clientPort }) => ({ ...relay, clientPort })),
          },
    ),
    ...records.timeoutKills.filter((kill) => /sender/.test(kill.functionName)).map(timeoutKillRecord),
  ].sort((a, b) => a.atMs - b.atMs);
  // The outage proxy's connection towards the tap is the tap's client: its port joins the two.
  const cuts: SessionCut[] = records.outageCuts.map((cut) => ({
    kind: 'relay-outage',
    ...relay,
    atMs: cut.atMs,
    clientPort: cut.upstreamPort,
  }));
  return {
    accepted,
    views: records.views,
    transactions,
    kills,
    cuts,
    ...(records.maxAttempts === undefined ? {} : { maxAttempts: records.maxAttempts }),
  };
}

/**
 * One input from several relays' (each from {@link checkerInput} with its `relay`): the same
 * messages and kills, every relay's transactions and cuts. A copy at any relay is a delivery.
 */
export function acrossRelays(inputs: readonly [CheckInput, ...CheckInput[]]): CheckInput {
  const [first] = inputs;
  return {
    ...first,
    transactions: inputs.flatMap((input) => input.transactions),
    cuts: inputs.flatMap((input) => input.cuts ?? []),
  };
}

/**
 * The checker's transactions: the tap's record of each (client side, times) joined with the relay's
 * (the fault it injected, whether it read the body) by the tap's upstream port — the relay's remote
 * port — and the transaction's place on its connection.
 */
export function joinTransactions(
  tapped: readonly TapTransaction[],
  relayed: readonly TransactionRecord[],
): SmtpTransaction[] {
  const byPort = new Map<number, TransactionRecord[]>();
  for (const record of relayed) {
    if (record.remotePort === undefined) continue;
    const list = byPort.get(record.remotePort) ?? [];
    list.push(record);
    byPort.set(record.remotePort, list);
  }
  // A port is reused by later connections: take the relay's records that began within this
  // connection's life, in order.
  const onConnection = new Map<number, TransactionRecord[]>();
  for (const transaction of tapped) {
    if (onConnection.has(transaction.connection) || transaction.upstreamPort === undefined) continue;
    const opened = transaction.connectionOpenedAtMs;
    const closed = transaction.closedAtMs ?? Number.POSITIVE_INFINITY;
    onConnection.set(
      transaction.connection,
      (byPort.get(transaction.upstreamPort) ?? []).filter(
        (record) => record.startedAtMs >= opened - 50 && record.startedAtMs <= closed + 50,
      ),
    );
  }
  return tapped.map((transaction) => {
    const record = onConnection.get(transaction.connection)?.[transaction.index];
    return {
      connection: transaction.connection,
      index: transaction.index,
      postdateId: transaction.postdateId ?? record?.received?.postdateId ?? null,
      messageId: transaction.messageId ?? record?.received?.messageId ?? null,
      // The label the relay kept once it read the dot says what it did then (a pinned drop).
      fault: record?.received?.label ?? record?.label ?? (record ? 'accept' : '(not seen by the relay)'),
      outcome: record?.received?.outcome ?? null,
      mailFromAtMs: transaction.mailFromAtMs,
      dataCommandAtMs: transaction.dataCommandAtMs,
      recipients: transaction.recipients,
      ...(transaction.clientPort === undefined ? {} : { clientPort: transaction.clientPort }),
      finalDotAtMs: transaction.finalDotAtMs,
      reply: transaction.reply,
      clientCommandAfterDotAtMs: transaction.clientCommandAfterDotAtMs,
      closedAtMs: transaction.closedAtMs,
      closedBy: transaction.closedBy,
    };
  });
}

function timeoutKillRecord(kill: TimeoutKill): KillRecord {
  return {
    kind: 'function-timeout',
    atMs: kill.killedAt,
    startedAtMs: kill.startedAt,
    functionName: kill.functionName,
    ...(Array.isArray(kill.records) ? { ids: kill.records } : {}),
  };
}
