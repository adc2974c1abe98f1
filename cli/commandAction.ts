import { type Command, InvalidArgumentError } from 'commander';
import type { Config } from '../lambdas/core/config.js';
import { SIDE_TENANT_PATTERN } from '../lambdas/core/testSide.js';
import type { CliSettingName } from '../lib/stackOutputs.js';
import { type ExitCode, UsageError } from './cliErrors.js';
import type { Output } from './output.js';
import type { Target } from './target.js';

/**
 * The settings the CLI decides with (lib/stackOutputs.ts `CLI_SETTINGS`): with `--stack` the
 * stack's own (its output `Settings`), else the environment's. Typed as these alone, so a command
 * cannot read one the stack does not give.
 */
export type CliConfig = Pick<Config, CliSettingName>;

/** What a command group's action gets from cli/postdate.ts: the open target, the output sink, a clock. */
export interface CommandContext {
  readonly target: Target;
  readonly out: Output;
  readonly config: CliConfig;
  readonly now: () => Date;
}

/**
 * cli/postdate.ts's `action`, handed to each `register…Commands(program, action)`: it opens the
 * target (`--stack`, `--local` or the environment), runs the command and turns every failure into
 * one line (or a JSON error document) and an exit code.
 */
export type CommandAction = <Args extends unknown[]>(
  run: (context: CommandContext, ...args: Args) => Promise<ExitCode>,
) => (...args: [...Args, Command]) => Promise<void>;

/** The tenant whose key the local stack seeds (local/, `npm start`). */
export const LOCAL_TENANT = 'local';

/**
 * The tenant a command works on: `--tenant`, or `local` against the local stack. Against AWS it must
 * be named: `local` there is a tenant nobody has (DESIGN §3: a key, a template, a list is one tenant's).
 */
export function tenantOf(context: Pick<CommandContext, 'target'>, tenant: string | undefined): string {
  if (tenant !== undefined) return tenant;
  if (context.target.mode === 'local') return LOCAL_TENANT;
  throw new UsageError('--tenant is required against AWS: pass --tenant TENANT (the tenant of its API key)');
}

/** `SIDE_TENANT_PATTERN` in words, for every refusal of a tenant's name the CLI makes. */
export const TENANT_NAME_RULE =
  '1–64 lower-case letters, digits, _ or -, starting with a letter or digit, and .test after it for its test side';

/**
 * `--tenant`'s parser on every command that takes it: a name a tenant can have, the API's rule
 * (`acme`, or its test side `acme.test`). A name none can have (`ACME`) is bad usage before anything is
 * read: a listing, an export or a reconcile of it would find nothing and say all is well (0260).
 */
export function tenantName(value: string): string {
  if (SIDE_TENANT_PATTERN.test(value)) return value;
  throw new InvalidArgumentError(
    `a tenant is ${TENANT_NAME_RULE} (the tenants with a key: postdate keys list)`,
  );
}

/** `--limit` of a paged listing: a whole number from 1 to `max`, as the API's `limit`. */
export function pageSize(max: number): (value: string) => number {
  return (value) => {
    if (!/^\d{1,4}$/.test(value) || Number(value) < 1 || Number(value) > max) {
      throw new InvalidArgumentError(`must be a whole number from 1 to ${max}`);
    }
    return Number(value);
  };
}
