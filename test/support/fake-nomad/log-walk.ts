import type { LogFiles, LogType } from './log-files.js';
import type { StreamFramer } from './stream-framer.js';

/**
 * How the Nomad client walks an allocation's rotated log files for the fs logs endpoint,
 * ported from client/fs_endpoint.go (HEAD aa026cc): logsImpl, streamFile, findClosest,
 * logIndexes and blockUntilNextLog. Files are read in 64 KiB reads and handed to the
 * StreamFramer with the offset after each read.
 */

/** fs_endpoint.go streamFrameSize; also the size of each read in streamFile. */
export const STREAM_FRAME_SIZE = 64 * 1024;
// fs_endpoint.go deleteEvent, truncateEvent
const DELETE_EVENT = 'file deleted';
const TRUNCATE_EVENT = 'file truncated';
// fs_endpoint.go logsImpl: filepath.Join(allocdir.SharedAllocName, allocdir.LogDirName)
const LOG_PATH = 'alloc/logs';
const LAST = Number.MAX_SAFE_INTEGER; // math.MaxInt64

/** fs_endpoint.go notFoundErr: answered with 404. */
export class LogNotFound extends Error {
  readonly code = 404;
  constructor(task: string, logType: string) {
    super(`log entry for task ${JSON.stringify(task)} and log type ${JSON.stringify(logType)} not found`);
  }
}

export interface LogsRequest {
  follow: boolean;
  offset: number;
  origin: 'start' | 'end';
  task: string;
  logType: LogType;
}

interface IndexedFile {
  idx: number;
  name: string;
  size: number;
}

/** fs_endpoint.go logIndexes: the stream's files by index (`<task>.<type>.<N>`). */
function logIndexes(entries: { name: string; size: number }[], task: string, logType: string): IndexedFile[] {
  const prefix = `${task}.${logType}.`;
  const indexes: IndexedFile[] = [];
  for (const entry of entries) {
    if (!entry.name.startsWith(prefix)) continue;
    const idxText = entry.name.slice(prefix.length);
    if (!/^[+-]?\d+$/.test(idxText)) throw new Error(`failed to convert ${JSON.stringify(idxText)} to a log index`);
    indexes.push({ idx: Number(idxText), name: entry.name, size: entry.size });
  }
  return indexes;
}

/**
 * fs_endpoint.go findClosest: the file at or after `desiredIdx` (the last one if none),
 * then `desiredOffset` walked across files: a negative one backwards from the end, clamped
 * to the start of the first file; a positive one forwards, clamped to the end of the last
 * file. An offset past the end is clamped, never refused.
 */
export function findClosest(entries: { name: string; size: number }[], desiredIdx: number, desiredOffset: number, task: string, logType: string) {
  const indexes = logIndexes(entries, task, logType).sort((a, b) => a.idx - b.idx);
  if (indexes.length === 0) throw new LogNotFound(task, logType);
  let i = indexes.findIndex((file) => file.idx >= desiredIdx);
  if (i === -1) i = indexes.length - 1;
  let offset = desiredOffset;
  for (;;) {
    const size = indexes[i]!.size;
    if (offset === 0) break;
    if (offset < 0) {
      if (size + offset >= 0) {
        offset += size;
        break;
      } else if (i === 0) {
        offset = 0;
        break;
      }
      offset += size;
      i -= 1;
    } else {
      if (offset <= size) break;
      else if (i === indexes.length - 1) {
        offset = size;
        break;
      }
      offset -= size;
      i += 1;
    }
  }
  return { file: indexes[i]!, offset };
}

/** fs_endpoint.go logsImpl: streams file after file until the last one (or, following, until `signal`). */
export async function logsImpl(request: LogsRequest, files: LogFiles, allocId: string, framer: StreamFramer, signal: AbortSignal): Promise<void> {
  const { follow, task, logType } = request;
  let nextIdx = request.origin === 'start' ? 0 : LAST;
  let offset = request.origin === 'start' ? request.offset : -request.offset;
  for (;;) {
    const entries = files.list(allocId);
    // "If we are not following logs, determine the max index for the logs we are interested in so we can stop there."
    const maxIndex = follow ? LAST : findClosest(entries, LAST, 0, task, logType).file.idx;
    const { file, offset: openOffset } = findClosest(entries, nextIdx, offset, task, logType);
    if (!follow && file.idx > maxIndex) return;
    const atEnd = !follow && file.idx === maxIndex;
    // blockUntilNextLog: the next index, or any greater one, exists.
    const nextLogExists = () => logIndexes(files.list(allocId), task, logType).some((entry) => entry.idx >= file.idx + 1);
    const streamed = await streamFile(
      { allocId, name: file.name, offset: openOffset, cancelAfterFirstEof: atEnd, nextLogExists: atEnd ? () => false : nextLogExists },
      files,
      framer,
      signal,
    );
    if (signal.aborted) return;
    // "If file doesn't exist, goto 1 as it may have been rotated out"
    if (streamed === 'not found') continue;
    if (atEnd) return;
    offset = 0;
    nextIdx = file.idx + 1;
  }
}

interface StreamedFile {
  allocId: string;
  name: string;
  offset: number;
  cancelAfterFirstEof: boolean;
  nextLogExists: () => boolean;
}

/**
 * fs_endpoint.go streamFile: reads to EOF in 64 KiB reads, each handed to the framer with
 * the offset after it; at EOF it stops when told to (not following, or the next file
 * exists, after one more read), else waits for the file to grow, be truncated or deleted.
 */
async function streamFile(target: StreamedFile, files: LogFiles, framer: StreamFramer, signal: AbortSignal): Promise<'streamed' | 'not found'> {
  const file = files.open(target.allocId, target.name);
  if (!file) return 'not found';
  const path = `${LOG_PATH}/${target.name}`;
  let offset = target.offset;
  let lastEvent = '';
  let cancelReceived = target.cancelAfterFirstEof;
  for (;;) {
    const data = file.content.subarray(offset, offset + STREAM_FRAME_SIZE);
    offset += data.length;
    if (data.length !== 0 || lastEvent !== '') framer.sendData(path, lastEvent, data, offset);
    lastEvent = '';
    if (data.length > 0) continue;
    if (cancelReceived) return 'streamed';
    // At EOF: the changes streamFile selects on (Modified, Deleted, Truncated, eofCancelCh, ctx.Done).
    for (;;) {
      if (file.deleted) {
        framer.sendData(path, DELETE_EVENT, Buffer.alloc(0), offset);
        return 'streamed';
      }
      if (file.content.length < offset) {
        offset = 0;
        lastEvent = TRUNCATE_EVENT;
        break;
      }
      if (file.content.length > offset) break;
      if (target.nextLogExists()) {
        // "try to read one more frame to avoid dropped entries during log rotation"
        cancelReceived = true;
        break;
      }
      if (!(await files.nextChange(signal))) return 'streamed';
    }
  }
}
