/**
 * The figures issue 28 ("The house, lighter") asks to report before and after: how many product
 * files one message crosses, the sender's files, product lines per area, lines in docs/.
 * `npx tsx scripts/houseMeasures.ts` prints them as JSON; a closing note quotes them.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');

function filesUnder(dir: string, ext: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return filesUnder(path, ext);
    return path.endsWith(ext) ? [path] : [];
  });
}

function lines(path: string): number {
  return readFileSync(path, 'utf8').split('\n').length - 1;
}

/** Product modules reachable by static imports from `entries` (type-only imports included: a reader opens them too). */
function reachable(entries: string[]): Set<string> {
  const seen = new Set<string>();
  const queue = entries.map((entry) => resolve(root, entry));
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    for (const match of source.matchAll(/from\s+'(\.[^']+)'/g)) {
      const target = resolve(dirname(file), (match[1] as string).replace(/\.js$/, '.ts'));
      if (target.includes('/lambdas/') && !target.endsWith('openapiTypes.ts')) queue.push(target);
    }
  }
  return seen;
}

const areas = readdirSync(join(root, 'lambdas')).filter((name) =>
  statSync(join(root, 'lambdas', name)).isDirectory(),
);
const linesByArea = Object.fromEntries(
  areas.map((area) => [
    area,
    filesUnder(join(root, 'lambdas', area), '.ts')
      .filter((file) => !file.endsWith('openapiTypes.ts'))
      .reduce((sum, file) => sum + lines(file), 0),
  ]),
);
const senderFiles = filesUnder(join(root, 'lambdas', 'sender'), '.ts');
const message = reachable(['lambdas/api/handler.ts', 'lambdas/sender/handler.ts']);
const smtpRecord = reachable(['lambdas/sender/handler.ts']);
const docs = filesUnder(join(root, 'docs'), '.md');

console.log(
  JSON.stringify(
    {
      files_one_message_crosses: message.size,
      files_an_sqs_record_reaches: smtpRecord.size,
      sender_files: senderFiles.length,
      sender_lines: senderFiles.reduce((sum, file) => sum + lines(file), 0),
      product_files: filesUnder(join(root, 'lambdas'), '.ts').length,
      product_lines_by_area: linesByArea,
      handler_lines: areas
        .map((area) => join(root, 'lambdas', area, 'handler.ts'))
        .filter((file) => {
          try {
            return statSync(file).isFile();
          } catch {
            return false;
          }
        })
        .reduce((sum, file) => sum + lines(file), 0),
      docs_lines: docs.reduce((sum, file) => sum + lines(file), 0),
      docs_pages_over_400_lines: docs.filter((file) => lines(file) > 400).map((file) => relative(root, file)),
    },
    null,
    2,
  ),
);
