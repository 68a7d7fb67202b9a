/**
 * The `alloc/logs` directories of the fake client's allocations, laid out as Nomad's
 * logmon lays them out (client/logmon/logging/rotator.go, FileRotator.nextFile): one file
 * per task and stream named `<task>.<stdout|stderr>.<N>`, N from 0, output appended to
 * the highest N. Tests write and rotate them by hand, so contents and sizes are exact.
 */
export interface LogFile {
  readonly name: string;
  content: Buffer;
  /** Removed from the directory; a reader that opened it keeps reading it, as on Unix. */
  deleted: boolean;
}

export type LogType = 'stdout' | 'stderr';

export class LogFiles {
  private readonly dirs = new Map<string, Map<string, LogFile>>();
  private readonly waiters = new Set<() => void>();

  /** The directory's files, as fs.List reports them (name and size). */
  list(allocId: string): { name: string; size: number }[] {
    return [...this.dir(allocId).values()].map((file) => ({ name: file.name, size: file.content.length }));
  }

  open(allocId: string, name: string): LogFile | undefined {
    return this.dir(allocId).get(name);
  }

  /** Appends to the stream's current file, creating `.0` first, as logmon's first write does. */
  append(allocId: string, task: string, type: LogType, text: string | Buffer): void {
    const current = this.current(allocId, task, type) ?? this.create(allocId, `${task}.${type}.0`);
    current.content = Buffer.concat([current.content, Buffer.from(text)]);
    this.changed();
  }

  /** Starts the next file (FileRotator.nextFile): later output goes there. */
  rotate(allocId: string, task: string, type: LogType): void {
    const current = this.current(allocId, task, type);
    this.create(allocId, `${task}.${type}.${current ? indexOf(current.name) + 1 : 0}`);
    this.changed();
  }

  /** Removes a file, as FileRotator.purgeOldFiles removes the oldest past max_files. */
  remove(allocId: string, name: string): void {
    const file = this.dir(allocId).get(name);
    if (!file) return;
    file.deleted = true;
    this.dir(allocId).delete(name);
    this.changed();
  }

  /** Resolves true at the next change to any file, false if `signal` aborts first. */
  nextChange(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (changed: boolean) => {
        this.waiters.delete(wake);
        signal.removeEventListener('abort', aborted);
        resolve(changed);
      };
      const wake = () => done(true);
      const aborted = () => done(false);
      this.waiters.add(wake);
      signal.addEventListener('abort', aborted);
    });
  }

  private changed(): void {
    for (const wake of [...this.waiters]) wake();
  }

  private current(allocId: string, task: string, type: LogType): LogFile | undefined {
    const prefix = `${task}.${type}.`;
    const mine = [...this.dir(allocId).values()].filter((file) => file.name.startsWith(prefix));
    return mine.sort((a, b) => indexOf(a.name) - indexOf(b.name)).at(-1);
  }

  private create(allocId: string, name: string): LogFile {
    const file: LogFile = { name, content: Buffer.alloc(0), deleted: false };
    this.dir(allocId).set(name, file);
    return file;
  }

  private dir(allocId: string): Map<string, LogFile> {
    let dir = this.dirs.get(allocId);
    if (!dir) this.dirs.set(allocId, (dir = new Map()));
    return dir;
  }
}

const indexOf = (name: string) => Number(name.slice(name.lastIndexOf('.') + 1));
