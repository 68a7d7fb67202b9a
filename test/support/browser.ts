import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Debian's chromium, which scripts/ensure-deps.sh --test-tools installs (playwright-core downloads no browser). */
export const CHROMIUM = '/usr/bin/chromium';

/** Builds the console from console/src into console/dist, the folder the control API serves, so a test sees the current source. */
export function buildConsole(): void {
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/build-console.ts'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}

export async function launchChromium(): Promise<Browser> {
  // --no-sandbox: tests run as root, where Chromium refuses its sandbox.
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}
