#!/usr/bin/env node
// The agentctl command (cli/main.ts). In the repository it runs the TypeScript source
// through tsx (a devDependency), so `npx agentctl` needs no build and is never stale;
// where tsx is absent (npm install -g . without dev dependencies) it runs the JavaScript
// that `npm run build:cli` compiles into dist/cli/. No script runs that build for you: run
// it in the checkout before such an install, or the shim has nothing to run.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = new URL('../cli/main.ts', import.meta.url);
const compiled = new URL('../dist/cli/main.js', import.meta.url);

async function tsxRegistered() {
  try {
    const { register } = await import('tsx/esm/api');
    register();
    return true;
  } catch {
    return false;
  }
}

if (existsSync(fileURLToPath(source)) && (await tsxRegistered())) await import(source.href);
else if (existsSync(fileURLToPath(compiled))) await import(compiled.href);
else {
  process.stderr.write('agentctl: neither tsx nor dist/cli/main.js is here: run `npm run build:cli` in the repository\n');
  process.exitCode = 1;
}
