// The entry of a local function's worker thread (local/runners/functionSandbox.ts). Plain JavaScript,
// so that it starts under any parent (tsx for `npm start`, vitest's forks in tests): it registers
// tsx's loader in this thread, then loads the TypeScript runtime that imports and runs the handler.
import { register } from 'tsx/esm/api';

register();
await import('./functionWorker.ts');
