import type { StoredSession } from './sessions-api-client.js';

/** Bounds of what a replica holds: past either, the least recently used sessions go. */
export interface HeldSessionBounds {
  maxSessions: number;
  maxBytes: number;
}

/**
 * 1,024 conversations or 16 MiB of their messages as JSON, whichever comes first: parsed,
 * that is about 22 MiB of heap (measured for text messages of 150 to 400 characters), a
 * small part of an agent's default 512 MiB, and a conversation of a few tens of KiB fits
 * hundreds of times.
 */
export const HELD_SESSION_BOUNDS: HeldSessionBounds = { maxSessions: 1024, maxBytes: 16 * 1_048_576 };

interface Held<M> {
  session: StoredSession<M>;
  bytes: number;
}

/**
 * The sessions this replica wrote last, as agent services hold them after its write, with
 * their ETags: the next turn reads with If-None-Match and, when no other replica wrote
 * meanwhile, gets 304 and no messages. Only a cache: a session missing here, or held at a
 * version no longer current, is fetched whole as before. Least recently used first out.
 */
export class HeldSessions<M> {
  private readonly held = new Map<string, Held<M>>();
  private bytes = 0;

  constructor(private readonly bounds: HeldSessionBounds = HELD_SESSION_BOUNDS) {}

  get(id: string): StoredSession<M> | undefined {
    const entry = this.held.get(id);
    if (entry === undefined) return undefined;
    // Map order is insertion order: moved to the end, it is the most recently used.
    this.held.delete(id);
    this.held.set(id, entry);
    return entry.session;
  }

  /** Holds `session`, whose messages take `bytes` as JSON; one without a tag cannot be asked for conditionally, so it is not held. */
  hold(id: string, session: StoredSession<M>, bytes: number): void {
    this.forget(id);
    if (session.tag === undefined || bytes > this.bounds.maxBytes) return;
    this.held.set(id, { session, bytes });
    this.bytes += bytes;
    for (const [oldest, entry] of this.held) {
      if (this.held.size <= this.bounds.maxSessions && this.bytes <= this.bounds.maxBytes) break;
      this.held.delete(oldest);
      this.bytes -= entry.bytes;
    }
  }

  forget(id: string): void {
    const entry = this.held.get(id);
    if (entry === undefined) return;
    this.held.delete(id);
    this.bytes -= entry.bytes;
  }

  get size(): number {
    return this.held.size;
  }
}
