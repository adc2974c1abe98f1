#!/usr/bin/env node
// The `postdate` bin (package.json "bin"): runs the compiled CLI, dist/cli.mjs, which `prepare`
// writes (after `npm ci`, before `npm pack`) with scripts/buildCli.mjs. No TypeScript is compiled at
// run time. In a checkout (cli/postdate.ts is there) the file is compiled again first when it is
// missing or older than any source it was made from, so an edit never runs stale code; an installed
// package has no sources and runs its file as it is.
import { existsSync, readFileSync, statSync } from 'node:fs';

const bundle = new URL('../dist/cli.mjs', import.meta.url);
const inputs = new URL('../dist/cli.inputs.json', import.meta.url);
const root = new URL('../', import.meta.url);

function stale() {
  if (!existsSync(bundle) || !existsSync(inputs)) return true;
  const builtAt = statSync(bundle).mtimeMs;
  const sources = JSON.parse(readFileSync(inputs, 'utf8'));
  // A source that is gone (moved, deleted) also means the file is out of date.
  return sources.some((source) => {
    const file = new URL(source, root);
    return !existsSync(file) || statSync(file).mtimeMs > builtAt;
  });
}

if (existsSync(new URL('../cli/postdate.ts', import.meta.url)) && stale()) {
  const { buildCli } = await import('../scripts/buildCli.mjs');
  await buildCli();
}
const { runAsProcess } = await import(bundle.href);
runAsProcess(process.argv.slice(2));
