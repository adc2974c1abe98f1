/**
 * The runbook's log searches as CloudWatch Logs runs them: a step's `aws logs tail … --filter-pattern`
 * read from docs/runbook.md, and the pattern applied to one log event. A walk (test/runbook) or a
 * function's test applies the runbook's own words to the lines the code writes, so that a step that
 * would show nothing fails a test (decision 0286).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A runbook step's `aws logs tail "<logGroup>" … --filter-pattern '…'`, as docs/runbook.md writes it
 * in procedure `procedure` (its heading's number, `4`, `7`), step `step`.
 */
export function runbookFilterPattern(procedure: string, step: number, logGroup: string): string {
  const runbook = readFileSync(join(import.meta.dirname, '../../docs/runbook.md'), 'utf8');
  const start = runbook.indexOf(`## ${procedure}. `);
  const section = start < 0 ? '' : runbook.slice(start, runbook.indexOf('\n## ', start + 1));
  // The step's text: from its number to the next step, or to the section's next paragraph.
  const stepText =
    new RegExp(`^${step}\\. [\\s\\S]*?(?=^\\d+\\. |^\\*\\*|$(?![\\s\\S]))`, 'm').exec(section)?.[0] ?? '';
  const literal = logGroup.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const found = new RegExp(`aws logs tail "${literal}"[^\`]*--filter-pattern (?:'([^']+)'|([^\\s\`]+))`).exec(
    stepText,
  );
  const pattern = found?.[1] ?? found?.[2];
  if (pattern === undefined)
    throw new Error(`procedure ${procedure} step ${step} names no filter pattern for ${logGroup}`);
  return pattern;
}

/**
 * CloudWatch Logs' term filter pattern over one log event, for the patterns the runbook writes:
 * terms (words or double-quoted phrases) that all must appear, or with `?` any of them; terms are
 * case sensitive.
 */
export function matchesFilterPattern(pattern: string, event: string): boolean {
  const terms = [...pattern.matchAll(/(\?)?(?:"([^"]*)"|(\S+))/g)].map((m) => ({
    any: m[1] === '?',
    text: m[2] ?? m[3] ?? '',
  }));
  const any = terms.filter((term) => term.any);
  const all = terms.filter((term) => !term.any);
  return (
    all.every((term) => event.includes(term.text)) &&
    (any.length === 0 || any.some((term) => event.includes(term.text)))
  );
}
