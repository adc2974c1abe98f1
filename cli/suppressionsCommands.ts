/**
 * `postdate suppressions list | add | remove`: one tenant's suppression list (DESIGN §6, §12), through
 * the same adapter the API and the sender use (lambdas/store/suppressionList.ts), so an address is
 * normalised and stored exactly as `PUT /v1/suppressions/{address}` would. Against the local stack the
 * tenant defaults to `local` (the tenant of the key `npm start` seeds); against AWS it must be named.
 * A tenant's test side (`acme.test`, DESIGN §14) has its own list, read and changed the same way.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Command } from 'commander';
import { isMessageId } from '../lambdas/core/ids.js';
import {
  formerQuotedKey,
  isSuppressionReason,
  SUPPRESSION_REASONS,
  type Suppression,
  type SuppressionReason,
  validateSuppressionAddress,
} from '../lambdas/core/suppressions.js';
import { SIDE_TENANT_PATTERN } from '../lambdas/core/testSide.js';
import type { SuppressionList } from '../lambdas/ports/SuppressionList.js';
import { DynamoSuppressionList } from '../lambdas/store/suppressionList.js';
import { EXIT, NotFoundError, UsageError } from './cliErrors.js';
import {
  type CommandAction,
  type CommandContext,
  pageSize,
  TENANT_NAME_RULE,
  tenantName,
  tenantOf,
} from './commandAction.js';
import { type Output, printTable } from './output.js';

export interface SuppressionsDeps {
  readonly list: SuppressionList;
  readonly now: () => Date;
}

export function suppressionsDeps(documents: DynamoDBDocumentClient, tableName: string, now: () => Date) {
  return { list: new DynamoSuppressionList(documents, tableName), now };
}

export interface SuppressionListReport {
  readonly tenant: string;
  readonly items: readonly Suppression[];
  /** Where the next page starts (`--after`), or null when this was the end. */
  readonly next: string | null;
}

/** One page (`--limit`, `--after`), or every entry with `--all`. */
export async function suppressionsList(
  deps: SuppressionsDeps,
  options: { tenant: string; limit: number; after?: string; all?: boolean },
  out: Output,
): Promise<SuppressionListReport> {
  const tenant = checkedTenant(options.tenant);
  let after = options.after === undefined ? null : checkedAddress(options.after);
  const items: Suppression[] = [];
  let next: string | null;
  do {
    const page = await deps.list.list(tenant, { limit: options.limit, after });
    items.push(...page.items);
    next = page.next;
    after = next;
  } while (options.all === true && next !== null);
  const report: SuppressionListReport = { tenant, items, next };
  if (out.json) {
    out.data(report);
    return report;
  }
  printTable(
    out,
    [
      { header: 'ADDRESS', value: (entry: Suppression) => entry.address },
      {
        header: 'REASON',
        value: (entry) => entry.reason,
        tone: (entry) => (entry.reason === 'manual' ? 'dim' : 'yellow'),
      },
      { header: 'MESSAGE', value: (entry) => entry.message_id ?? '-' },
      { header: 'SINCE', value: (entry) => entry.created_at },
    ],
    items,
    `no suppressed addresses for tenant ${tenant}`,
  );
  if (next !== null) out.line(`more: --after ${next} (or --all)`);
  return report;
}

export async function suppressionsAdd(
  deps: SuppressionsDeps,
  options: { tenant: string; address: string; reason?: string },
  out: Output,
): Promise<Suppression> {
  const tenant = checkedTenant(options.tenant);
  const address = checkedAddress(options.address);
  let reason: SuppressionReason | undefined;
  if (options.reason !== undefined) {
    if (!isSuppressionReason(options.reason)) {
      throw new UsageError(`--reason must be one of ${SUPPRESSION_REASONS.join(', ')}`);
    }
    reason = options.reason;
  }
  const entry = await deps.list.put({ tenant, address, reason, now: deps.now() });
  if (out.json) out.data(entry);
  else
    out.line(`suppressed ${entry.address} for tenant ${tenant} (${entry.reason}, since ${entry.created_at})`);
  return entry;
}

export async function suppressionsRemove(
  deps: SuppressionsDeps,
  options: { tenant: string; address: string },
  out: Output,
): Promise<Suppression> {
  const tenant = checkedTenant(options.tenant);
  const address = checkedAddress(options.address);
  // And the entry a quoted local part had before decision 0184, if it was stored so.
  const removed = await deps.list.remove(tenant, address, formerQuotedKey(options.address));
  if (removed === null)
    throw new NotFoundError(`${address} is not on the suppression list of tenant ${tenant}`, listOf(tenant));
  if (out.json) out.data(removed);
  else
    out.line(
      `removed ${removed.address} from the suppression list of tenant ${tenant} (was ${removed.reason})`,
    );
  return removed;
}

export interface RemovedByMessageReport {
  readonly tenant: string;
  readonly message_id: string;
  readonly dry_run: boolean;
  /** The entries that message added: counted (`--dry-run`) or removed. */
  readonly count: number;
  readonly addresses: readonly string[];
}

/**
 * Undoes a mass mistake (decision 0172): removes every entry of the tenant's list that one message
 * added (`message_id`: its hard bounces, its SES bounces and complaints), after reading the whole
 * list; `--dry-run` only counts them. Exit 1 when that message added nothing.
 */
export async function suppressionsRemoveAddedBy(
  deps: SuppressionsDeps,
  options: { tenant: string; messageId: string; dryRun: boolean },
  out: Output,
): Promise<RemovedByMessageReport> {
  const tenant = checkedTenant(options.tenant);
  if (!isMessageId(options.messageId)) throw new UsageError('--message must be a message id');
  const addresses: string[] = [];
  let after: string | null = null;
  do {
    const page = await deps.list.list(tenant, { limit: 100, after });
    for (const entry of page.items) if (entry.message_id === options.messageId) addresses.push(entry.address);
    after = page.next;
  } while (after !== null);
  if (addresses.length === 0) {
    throw new NotFoundError(
      `message ${options.messageId} added nothing to the suppression list of tenant ${tenant}`,
      listOf(tenant),
    );
  }
  if (!options.dryRun) {
    for (const address of addresses) await deps.list.remove(tenant, address);
  }
  const report = {
    tenant,
    message_id: options.messageId,
    dry_run: options.dryRun,
    count: addresses.length,
    addresses,
  };
  if (out.json) out.data(report);
  else
    out.line(
      `${options.dryRun ? 'would remove' : 'removed'} ${addresses.length} address${addresses.length === 1 ? '' : 'es'} message ${options.messageId} added to the list of tenant ${tenant}`,
    );
  return report;
}

/** Where a user who named an address (or message) the list does not hold finds the right one. */
function listOf(tenant: string): string {
  return `postdate suppressions list --tenant ${tenant}`;
}

/** A live tenant, or its test side (`acme.test`: DESIGN §14, its own list). */
function checkedTenant(tenant: string): string {
  if (!SIDE_TENANT_PATTERN.test(tenant)) {
    throw new UsageError(`--tenant must be ${TENANT_NAME_RULE}`);
  }
  return tenant;
}

function checkedAddress(address: string): string {
  const validated = validateSuppressionAddress(address);
  if (!validated.ok) throw new UsageError(`the address ${validated.errors[0]?.message ?? 'is invalid'}`);
  return validated.value;
}

export function registerSuppressionsCommands(program: Command, action: CommandAction): void {
  const group = program
    .command('suppressions')
    .description("a tenant's suppression list: addresses Postdate no longer sends to (DESIGN §12)");
  const deps = ({ target, now }: CommandContext) =>
    suppressionsDeps(target.documents, target.refs.tableName, now);
  /** Every command's tenant: `--tenant`, or `local` on the local stack (`tenantOf`, as templates'). */
  const tenantOption = [
    '--tenant <tenant>',
    'the tenant (its test side: TENANT.test; default on the local stack: local)',
    tenantName,
  ] as const;
  group
    .command('list')
    .description('the suppressed addresses of a tenant, in address order')
    .option(...tenantOption)
    .option('--limit <n>', 'at most this many per page (1–100)', pageSize(100), 50)
    .option('--after <address>', 'start after this address (the `more:` line of the previous page)')
    .option('--all', 'every page')
    .action(
      action(async (context, options: { tenant?: string; limit: number; after?: string; all?: boolean }) => {
        await suppressionsList(
          deps(context),
          {
            tenant: tenantOf(context, options.tenant),
            limit: options.limit,
            ...(options.after === undefined ? {} : { after: options.after }),
            all: options.all === true,
          },
          context.out,
        );
        return EXIT.ok;
      }),
    );
  group
    .command('add')
    .description('suppress an address (as PUT /v1/suppressions/{address})')
    .argument('<address>')
    .option(...tenantOption)
    .option(
      '--reason <reason>',
      `${SUPPRESSION_REASONS.join('|')} (default: manual; an existing entry keeps its own)`,
    )
    .action(
      action(async (context, address: string, options: { tenant?: string; reason?: string }) => {
        await suppressionsAdd(
          deps(context),
          {
            tenant: tenantOf(context, options.tenant),
            address,
            ...(options.reason === undefined ? {} : { reason: options.reason }),
          },
          context.out,
        );
        return EXIT.ok;
      }),
    );
  group
    .command('remove')
    .description(
      'remove an address from the list (as DELETE /v1/suppressions/{address}), or every entry one message added (--message); exit 4 if absent',
    )
    .argument('[address]')
    .option(...tenantOption)
    .option('--message <id>', 'instead of an address: the entries this message added (undo a mass mistake)')
    .option('--dry-run', 'with --message: count them, remove nothing')
    .action(
      action(
        async (
          context,
          address: string | undefined,
          options: { tenant?: string; message?: string; dryRun?: boolean },
        ) => {
          if ((address === undefined) === (options.message === undefined)) {
            throw new UsageError('give an address or --message <id>, not both');
          }
          const tenant = tenantOf(context, options.tenant);
          if (options.message !== undefined) {
            const dryRun = options.dryRun === true;
            await suppressionsRemoveAddedBy(
              deps(context),
              { tenant, messageId: options.message, dryRun },
              context.out,
            );
          } else {
            if (options.dryRun === true) throw new UsageError('--dry-run goes with --message');
            await suppressionsRemove(deps(context), { tenant, address: address ?? '' }, context.out);
          }
          return EXIT.ok;
        },
      ),
    );
}
