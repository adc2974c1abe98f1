import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TENANT_PATTERN } from '../../lambdas/core/requestLimits.js';
import { isLiveSide, isTestSide, publicTenant, testSideOf } from '../../lambdas/core/testSide.js';

/**
 * DESIGN §14 "Test and live data never meet", §6 "alarms and the dashboard are the way to a person":
 * one rule says whether a message is the live stack's — whether its outcome moves the live alarms,
 * gauges and DLQ, and whether the live relays' gates (breaker, drain, pause) hold it.
 */
const tenantName = fc.stringMatching(TENANT_PATTERN);

describe('the live side of a tenant', () => {
  it('holds every live tenant and none of their test sides', () => {
    fc.assert(
      fc.property(tenantName, (tenant) => {
        expect(isLiveSide(tenant)).toBe(true);
        expect(isLiveSide(testSideOf(tenant))).toBe(false);
        // Both sides are the one public tenant: only the side differs.
        expect(publicTenant(testSideOf(tenant))).toBe(tenant);
      }),
    );
  });

  it('is exactly what is not a test side, for any tenant id', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), tenantName.map(testSideOf), tenantName), (tenantId) => {
        expect(isLiveSide(tenantId)).toBe(!isTestSide(tenantId));
      }),
    );
  });
});
