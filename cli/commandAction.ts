import type { Command } from 'commander';
import type { ExitCode } from './cliErrors.js';
import type { Output } from './output.js';
import type { Target } from './target.js';

/** What a command group's action gets from cli/postdate.ts: the open target, the output sink, a clock. */
export interface CommandContext {
  readonly target: Target;
  readonly out: Output;
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
