import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';

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

/**
 * Signs `page` in with `token` the way the console keeps a sign-in (console/src/session.ts:
 * in the tab's sessionStorage, so it is set on the console's origin first), then opens `path`.
 */
export async function openSignedIn(page: Page, origin: string, token: string, path: string): Promise<void> {
  await page.goto(origin);
  await page.evaluate((value) => sessionStorage.setItem('agent-platform.session', value), token);
  await page.goto(`${origin}${path}`);
}

/** The agent page of `agentId`, signed in with `token`, on its tab named `tab`. */
export async function openAgentTab(page: Page, origin: string, token: string, agentId: string, tab: string): Promise<void> {
  await openSignedIn(page, origin, token, `/agents/${agentId}`);
  await page.getByRole('tab', { name: tab, exact: true }).click();
}
