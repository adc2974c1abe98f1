import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../cli/postdate.js';

/** The runbook and the pages its setup (operations.md) and its restore and export (recovery.md) moved to. */
const OPERATOR_PAGES = ['runbook.md', 'operations.md', 'recovery.md'];

/**
 * Every command the runbook's pages tell an operator to type: the `npx postdate …` spans. (Bare
 * `postdate …` spans name tools in prose; the tools table shows syntax such as `[--since 24h]`.)
 */
function runbookCommands(): string[] {
  const text = OPERATOR_PAGES.map((page) =>
    readFileSync(new URL(`../../docs/${page}`, import.meta.url), 'utf8'),
  ).join('\n');
  const commands = [...text.matchAll(/`npx postdate ([^`]+)`/g)].map((match) => match[1] ?? '');
  return [...new Set(commands.filter((command) => !command.includes('<command>')))];
}

/** Splits like a shell would for these lines: quotes group, `$VARS` and `<placeholders>` become values. */
function argv(command: string): string[] {
  const tokens = command.match(/"[^"]*"|'[^']*'|\S+/g) ?? [];
  return tokens
    .filter((token) => token !== '>' && !token.endsWith('.json'))
    .map((token) => token.replace(/^["']|["']$/g, ''))
    .map((token) => (token.startsWith('<') || token.includes('$') ? placeholder(token) : token));
}

function placeholder(token: string): string {
  return token.startsWith('<key')
    ? 'key_0123456789abcdef'
    : token.startsWith('<')
      ? '01JQ5000000000000000000001'
      : 'value';
}

/** The program with every action replaced by a recorder, and commander's own output silenced. */
function dryProgram(): { program: Command; ran: string[] } {
  const program = buildProgram();
  const ran: string[] = [];
  const visit = (command: Command, path: string[]) => {
    command.configureOutput({ writeOut: () => {}, writeErr: () => {} });
    for (const sub of command.commands) visit(sub, [...path, sub.name()]);
    if (command.commands.length === 0) command.action(() => void ran.push(path.join(' ')));
  };
  visit(program, []);
  return { program, ran };
}

describe('docs/runbook.md, operations.md and recovery.md', () => {
  const commands = runbookCommands();

  it('names postdate commands in its steps', () => {
    expect(commands.length).toBeGreaterThan(15);
  });

  it.each(commands)('`postdate %s` is a command that exists, with options it accepts', async (command) => {
    const { program, ran } = dryProgram();
    try {
      await program.parseAsync(argv(command), { from: 'user' });
    } catch (error) {
      // `--help` ends parsing on purpose; anything else (unknown command or option) is a real failure.
      if ((error as { code?: unknown }).code === 'commander.helpDisplayed') return;
      throw error;
    }
    expect(ran).toHaveLength(1);
  });
});
