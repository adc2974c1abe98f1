/**
 * Test mode's two sides of a tenant (DESIGN §14). A test key (`pd_test_…`) acts for the tenant's
 * *test side*: an internal tenant id, the tenant's name with `.test` after it (`acme` →
 * `acme.test`). A live tenant's name can never hold a dot (TENANT_PATTERN), so the two never meet:
 * every tenant-scoped record — messages, group heads, templates, webhooks, suppressions, list
 * indexes — is keyed by the tenant id and so is isolated by construction, with no check to forget.
 *
 * The id with its suffix stays internal: what callers see (an event's `tenant`) is the public name,
 * and `test: true` says which side it came from.
 */
import { asciiDomain } from './addresses.js';
import { TENANT_PATTERN } from './requestLimits.js';

/** What a test side's tenant id ends with; a dot, which no live tenant name may contain. */
export const TEST_SIDE_SUFFIX = '.test';

/** A tenant id as the authorizer hands it to the functions: a live tenant or a test side. */
export const SIDE_TENANT_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}(?:\.test)?$/;

/** The secret prefix of a test key; a live key never starts with it. */
export const TEST_KEY_PREFIX = 'pd_test_';

/** The relay a test message's attempts name (DESIGN §15's `relay`): the simulator, never a real one. */
export const SIMULATOR_RELAY = 'simulator';

/** The reserved domain of the mailbox simulator (RFC 2606 `.test`). */
export const SIMULATOR_DOMAIN = 'simulator.postdate.test';

/**
 * Whether an address's domain is the mailbox simulator's as RCPT TO would carry it (`asciiDomain`:
 * in any case, and in A-labels, so `ſimulator.postdate.test` is it): its recipients are answered by
 * the simulator on a test message, and refused on a live enqueue, which would hand them to a relay
 * (decisions 0192, 0321).
 */
export function isSimulatorDomain(domain: string): boolean {
  return asciiDomain(domain) === SIMULATOR_DOMAIN;
}

/** The internal tenant id a test key of `tenant` acts for. */
export function testSideOf(tenant: string): string {
  return `${tenant}${TEST_SIDE_SUFFIX}`;
}

/** Whether a tenant id is a test side (its messages never reach the relay). */
export function isTestSide(tenantId: string): boolean {
  return tenantId.endsWith(TEST_SIDE_SUFFIX) && TENANT_PATTERN.test(publicTenant(tenantId));
}

/** The tenant's public name: the id without the test side's suffix. */
export function publicTenant(tenantId: string): string {
  return tenantId.endsWith(TEST_SIDE_SUFFIX) ? tenantId.slice(0, -TEST_SIDE_SUFFIX.length) : tenantId;
}

/**
 * Whether a message of this tenant id is the live stack's (DESIGN §14 "Test and live data never
 * meet", §6 "alarms and the dashboard are the way to a person"): the one rule of what the live side
 * holds, counts and keeps. Only a live message passes the relays' gates (breaker, drain, pause,
 * throttle: sender/processCopy.ts), so only its overdue entry is left to the senders during an outage
 * or a pause (core/sweepDecision.ts); only its outcome counts in the metrics the alarms and the
 * dashboard watch (sender/outcomeWrite.ts), waits in the partitions the live gauges count
 * (store/senderTransitions.ts), and puts its copy in the DLQ when it is `dead` (sender/copyRun.ts).
 * A test message's state is told by the API, its events and webhooks, on its own side (decision 0135),
 * and since nobody waits for its `failed`, `dead` or `unknown`, those start its retention
 * (core/messageLifetime.ts, decision 0145).
 */
export function isLiveSide(tenantId: string): boolean {
  return !isTestSide(tenantId);
}
