#!/usr/bin/env node
// The `postdate` bin (package.json "bin"): registers tsx's loader and runs the TypeScript entry, so the
// CLI works straight from a checkout after `npm ci`, with no build step. tsx is a devDependency.
import { register } from 'tsx/esm/api';

register();
const { runAsProcess } = await import('./postdate.ts');
runAsProcess(process.argv.slice(2));
