import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CliError, EXIT } from './errors.js';

/** How long `login --sso` waits for the browser to come back. */
const WAIT_MS = 5 * 60_000;

const PAGE = (message: string) => `<!doctype html><meta charset="utf-8"><title>agentctl</title><p>${message}</p>`;

/**
 * A one-shot listener on 127.0.0.1 at a port the system picks: the loopback redirect of
 * RFC 8252 §7.3, as `gh auth login` receives its code. The control API's callback sends the
 * browser here with `?code=` (a one-time code, not a session token).
 */
export class LoopbackReceiver {
  private constructor(private readonly server: Server, readonly redirectUri: string, private readonly received: Promise<string>) {}

  static async open(): Promise<LoopbackReceiver> {
    let deliver!: (code: string) => void;
    const received = new Promise<string>((resolve) => (deliver = resolve));
    const server = createServer((req, res) => {
      const code = new URL(req.url ?? '/', 'http://127.0.0.1').searchParams.get('code');
      if (req.method !== 'GET' || !code) {
        res.writeHead(404, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE('Nothing here.'));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE('Signed in: you can close this window and go back to the terminal.'));
      deliver(code);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return new LoopbackReceiver(server, `http://127.0.0.1:${port}/callback`, received);
  }

  /** The one-time code, once the browser brings it; a CliError after five minutes. */
  async code(): Promise<string> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, fail) => {
      timer = setTimeout(() => fail(new CliError('no sign-in came back within 5 minutes; run agentctl login --sso again', EXIT.refused)), WAIT_MS);
    });
    try {
      return await Promise.race([this.received, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    this.server.closeAllConnections();
    this.server.close();
  }
}

/** Asks the desktop to open `url` (xdg-open, open or start); where there is none, the printed URL is the way. */
export function tryOpenBrowser(url: string): void {
  const [command, ...args] = process.platform === 'darwin' ? ['open', url] : process.platform === 'win32' ? ['cmd', '/c', 'start', '""', url] : ['xdg-open', url];
  try {
    const child = spawn(command!, args, { stdio: 'ignore', detached: true });
    child.on('error', () => {});
    child.unref();
  } catch {
    // no opener on this machine: the URL was printed
  }
}
