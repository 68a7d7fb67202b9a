import type { ServerResponse } from 'node:http';
import type { LogFiles, LogType } from './log-files.js';
import { LogNotFound, logsImpl, STREAM_FRAME_SIZE, type LogsRequest } from './log-walk.js';
import { encodeFrame, StreamFramer } from './stream-framer.js';

/**
 * GET /v1/client/fs/logs/:alloc_id, as a Nomad agent answers it: the parameters and
 * their errors from command/agent/fs_endpoint.go `Logs` (HEAD aa026cc), the checks of
 * the client's client/fs_endpoint.go `logs`, then logsImpl's frames (log-walk.ts,
 * stream-framer.ts), or with plain=true their bytes only.
 */

// client/fs_endpoint.go streamHeartbeatRate, streamBatchWindow
const HEARTBEAT_MS = 1_000;
const BATCH_WINDOW_MS = 200;

export interface LogsHost {
  allocation(id: string): Record<string, any> | undefined;
  readonly logs: LogFiles;
}

class CodedError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** strconv.ParseBool, whose error text Nomad puts in its 400. */
function parseBool(text: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  throw new Error(`strconv.ParseBool: parsing ${JSON.stringify(text)}: invalid syntax`);
}

/** strconv.ParseInt(text, 10, 64). */
function parseInt64(text: string): number {
  if (!/^[+-]?\d+$/.test(text)) throw new Error(`strconv.ParseInt: parsing ${JSON.stringify(text)}: invalid syntax`);
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new Error(`strconv.ParseInt: parsing ${JSON.stringify(text)}: value out of range`);
  return value;
}

/** command/agent/fs_endpoint.go Logs: the query, checked in its order, with its 400s. */
function parseQuery(allocId: string, query: URLSearchParams): LogsRequest & { plain: boolean } {
  if (allocId === '') throw new CodedError(400, 'must provide a valid alloc id');
  const task = query.get('task') ?? '';
  if (task === '') throw new CodedError(400, 'must provide task name');
  const bool = (name: string) => {
    const text = query.get(name) ?? '';
    if (text === '') return false;
    try {
      return parseBool(text);
    } catch (error) {
      throw new CodedError(400, `failed to parse ${name} field to boolean: ${(error as Error).message}`);
    }
  };
  const follow = bool('follow');
  const plain = bool('plain');
  const logType = query.get('type') ?? '';
  if (logType !== 'stdout' && logType !== 'stderr') throw new CodedError(400, 'must provide log type (stdout/stderr)');
  let offset = 0;
  const offsetText = query.get('offset') ?? '';
  if (offsetText !== '') {
    try {
      offset = parseInt64(offsetText);
    } catch (error) {
      throw new CodedError(400, `error parsing offset: ${(error as Error).message}`);
    }
  }
  const origin = query.get('origin') || 'start';
  if (origin !== 'start' && origin !== 'end') throw new CodedError(400, 'origin must be start or end');
  return { task, follow, plain, logType: logType as LogType, offset, origin };
}

/** client/fs_endpoint.go logs: the allocation, then the task and whether it has started. */
function checkTask(host: LogsHost, allocId: string, task: string): void {
  const allocation = host.allocation(allocId);
  if (!allocation) throw new CodedError(404, `Unknown allocation ${JSON.stringify(allocId)}`);
  const state = allocation.TaskStates?.[task];
  if (!state) throw new CodedError(400, `unknown task name ${JSON.stringify(task)}`);
  if (!state.StartedAt) throw new CodedError(404, `task ${JSON.stringify(task)} not started yet. No logs available`);
}

export async function serveLogs(host: LogsHost, allocId: string, query: URLSearchParams, response: ServerResponse): Promise<void> {
  let request: ReturnType<typeof parseQuery>;
  try {
    request = parseQuery(allocId, query);
    checkTask(host, allocId, request.task);
  } catch (error) {
    return fail(response, error as Error);
  }
  const contentType = request.plain ? 'text/plain' : 'application/json';
  const write = (bytes: string | Buffer) => {
    if (!response.headersSent) response.writeHead(200, { 'content-type': contentType });
    response.write(bytes);
  };
  const framer = new StreamFramer(
    (frame) => (request.plain ? frame.Data && write(frame.Data) : write(encodeFrame(frame))),
    HEARTBEAT_MS,
    BATCH_WINDOW_MS,
    STREAM_FRAME_SIZE,
  );
  const gone = new AbortController();
  response.on('close', () => gone.abort());
  framer.run();
  try {
    await logsImpl(request, host.logs, allocId, framer, gone.signal);
  } catch (error) {
    framer.destroy();
    return fail(response, error as Error);
  }
  framer.destroy();
  if (!response.headersSent) response.writeHead(200, { 'content-type': contentType });
  response.end();
}

/** An error before the first frame is the response's status (fsStreamImpl); after it, the stream just ends. */
function fail(response: ServerResponse, error: Error): void {
  if (response.headersSent) return void response.end();
  const code = error instanceof CodedError || error instanceof LogNotFound ? error.code : 500;
  response.writeHead(code, { 'content-type': 'text/plain' }).end(error.message);
}
