import { execFile } from 'node:child_process';
import { podmanRuntime } from '../../control/orchestrator/podman/host.js';
import type { TestControl } from './control-harness.js';

/**
 * Helpers for the orchestration tests that run real podman containers: polling with a
 * deadline, commands inside a replica, and a reader of server-sent event streams.
 */

/** Polls `probe` until it returns a value other than undefined; fails with `what` and the last value seen. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last === undefined ? '' : `; last error: ${(last as Error).message ?? String(last)}`}`);
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

export interface PodmanResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs podman with the control's OCI runtime; never throws on a non-zero exit (the test decides). */
export function podman(control: TestControl, args: string[], timeoutMs = 60_000): Promise<PodmanResult> {
  const runtime = podmanRuntime(control.config.podman);
  return new Promise((resolve) => {
    execFile('podman', [...(runtime ? ['--runtime', runtime] : []), ...args], { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** `podman exec <replica> sh -c <script>`. */
export const execIn = (control: TestControl, replicaId: string, script: string, timeoutMs = 60_000) =>
  podman(control, ['exec', replicaId, 'sh', '-c', script], timeoutMs);

export async function inspect(control: TestControl, name: string): Promise<any> {
  const result = await podman(control, ['inspect', name]);
  if (result.code !== 0) throw new Error(`podman inspect ${name} failed: ${result.stderr}`);
  return JSON.parse(result.stdout)[0];
}

export interface RunningAgent {
  id: string;
  agent: any;
  replica: { id: string; address: string };
}

/** Creates an agent with a deploy of the test image, waits for `running` and a routable replica. */
export async function createRunningAgent(control: TestControl, token: string, body: Record<string, unknown> = {}): Promise<RunningAgent> {
  const { deploy = {}, ...rest } = body as { deploy?: Record<string, unknown> };
  const created = await control.request('POST', '/agents', {
    token,
    body: {
      name: `agent-${Math.random().toString(36).slice(2, 8)}`,
      api_key: 'sk-test',
      ...rest,
      deploy: { replicas: 1, env: [{ key: 'MODE', value: 'serve' }], ...deploy },
    },
  });
  if (created.status !== 201) throw new Error(`creating the agent failed: ${created.status} ${JSON.stringify(created.body)}`);
  const id: string = created.body.id;
  const agent = await waitFor(`agent ${id} to be running`, async () => {
    const response = await control.request('GET', `/agents/${id}`, { token });
    if (response.body?.status === 'failed' || response.body?.status === 'crashed') {
      throw new Error(`agent ${id} is ${response.body.status}: ${response.body.error}`);
    }
    return response.body?.status === 'running' ? response.body : undefined;
  }, 60_000);
  const replica = await waitFor(`a routed replica of ${id}`, async () => {
    const status = await control.driver!.status(id);
    const routed = status?.replicas.find((r) => r.state === 'running' && r.address);
    return routed ? { id: routed.id, address: routed.address! } : undefined;
  });
  return { id, agent, replica };
}

export interface SseFrame {
  event: string | undefined;
  id: string | undefined;
  data: string;
}

/**
 * Reads a server-sent event stream with fetch: frames are collected as they arrive;
 * `next` waits for a frame matching a predicate; `close` aborts the request.
 */
export class SseReader {
  readonly frames: SseFrame[] = [];
  status = 0;
  ended = false;
  private readonly controller = new AbortController();
  private buffer = '';
  private waiters: (() => void)[] = [];
  private done: Promise<void> = Promise.resolve();

  static async open(url: string, headers: Record<string, string>): Promise<SseReader> {
    const reader = new SseReader();
    const response = await fetch(url, { headers, signal: reader.controller.signal });
    reader.status = response.status;
    if (!response.ok || !response.body) {
      reader.body = await response.text().catch(() => '');
      reader.ended = true;
      return reader;
    }
    reader.contentType = response.headers.get('content-type') ?? '';
    reader.done = reader.pump(response.body);
    return reader;
  }

  body = '';
  contentType = '';

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
        this.buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = this.buffer.indexOf('\n\n')) >= 0) {
          const block = this.buffer.slice(0, end);
          this.buffer = this.buffer.slice(end + 2);
          const frame = parseFrame(block);
          if (frame) this.frames.push(frame);
        }
        this.wake();
      }
    } catch {
      // aborted by close()
    } finally {
      this.ended = true;
      this.wake();
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves with the first collected frame (from index `from`) that matches, or fails after `timeoutMs`. */
  async next(what: string, match: (frame: SseFrame) => boolean, timeoutMs = 20_000, from = 0): Promise<SseFrame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.slice(from).find(match);
      if (found) return found;
      if (this.ended) throw new Error(`stream ended before ${what}; frames: ${JSON.stringify(this.frames.map((f) => f.event))}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; ${this.frames.length} frame(s) seen`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Waits until the server ends the stream, or fails after `timeoutMs`. */
  async ends(timeoutMs = 20_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the stream did not end within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.done, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    this.controller.abort();
  }
}

function parseFrame(block: string): SseFrame | undefined {
  let event: string | undefined;
  let id: string | undefined;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'id') id = value;
    else if (field === 'data') data.push(value);
  }
  if (event === undefined && id === undefined && data.length === 0) return undefined; // a comment (heartbeat)
  return { event, id, data: data.join('\n') };
}
