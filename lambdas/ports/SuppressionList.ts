/**
 * A tenant's suppression list (DESIGN §12) as the API, the sender, the bounce function and the CLI
 * use it. Addresses given here are already normalised (lambdas/core/suppressions.ts). The DynamoDB
 * adapter is store/suppressionList.ts.
 */
import type { Suppression, SuppressionInput, SuppressionReason } from '../core/suppressions.js';

/** One page of a tenant's list, in address order; `next` is the last address when more may follow. */
export interface SuppressionPage {
  readonly items: readonly Suppression[];
  readonly next: string | null;
}

export interface SuppressionList {
  /** Which of these addresses are on the tenant's list (one read per address, batched). */
  suppressedAmong(tenant: string, addresses: readonly string[]): Promise<ReadonlySet<string>>;
  /**
   * Adds an address the relay or SES reported; an entry already there is kept as it is (the first
   * reason and message stand). One conditional-free write per address: safe to repeat.
   */
  addReported(input: SuppressionInput): Promise<void>;
  /**
   * An operator's add: creates the entry, or keeps an existing one's time and message and sets its
   * reason when `reason` is given. One write; answers the entry as stored.
   */
  put(input: {
    tenant: string;
    address: string;
    reason: SuppressionReason | undefined;
    now: Date;
  }): Promise<Suppression>;
  /**
   * Removes an entry and answers it; null when the tenant had none for the address. `formerKey`: the
   * key the address as given had before decision 0184 (core/suppressions.ts `formerQuotedKey`),
   * removed too.
   */
  remove(tenant: string, address: string, formerKey?: string): Promise<Suppression | null>;
  /** A page of at most `limit` entries after the address `after` (null: from the start). */
  list(tenant: string, page: { limit: number; after: string | null }): Promise<SuppressionPage>;
}
