/**
 * What a stop signal asks of `npm start` (DESIGN §7: any way of stopping stops every part and frees
 * every port). The first one stops the parts in order. One Ctrl-C often arrives twice: the terminal
 * sends SIGINT to the whole process group, and a parent that relays it sends it again, so a repeat
 * within {@link SAME_SIGNAL_MS} is the same request and changes nothing. A later one is a person
 * pressing Ctrl-C again because the stop takes too long: exit at once (DynamoDB Local still ends, its
 * stdin closes). Pure, so that the window has a test of its own (test/local/stopSignals.test.ts): a
 * whole stack cannot deliver two signals 2 s apart reliably on a loaded machine (decision 0271).
 */

/** A second signal this soon after the first is the same request. */
export const SAME_SIGNAL_MS = 2_000;

export type StopRequest = 'stop' | 'same request' | 'exit now';

/** `firstAt`: when the first stop signal came (ms), undefined if this is the first. */
export function stopRequest(firstAt: number | undefined, now: number): StopRequest {
  if (firstAt === undefined) return 'stop';
  return now - firstAt < SAME_SIGNAL_MS ? 'same request' : 'exit now';
}
