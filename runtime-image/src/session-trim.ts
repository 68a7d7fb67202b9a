export interface SessionBounds {
  /** Bytes of the session's messages as one JSON array, as agent services measure them. */
  maxBytes: number;
  /** Turns kept; past it the oldest go. */
  maxTurns: number;
}

export interface SessionWithTurn<M> {
  messages: M[];
  /** How many of the earlier messages were left out to stay within the bounds. */
  dropped: number;
  bytes: number;
}

/**
 * The session once `turn` is added: its history, less whole oldest turns until the
 * result fits `bounds`, then the turn. A turn starts at a message `startsTurn` accepts
 * (the user's) and runs until the next, so a tool result is never kept without the call
 * it answers. Undefined when the turn alone is larger than `bounds.maxBytes`.
 */
export function sessionWithTurn<M>(
  history: readonly M[],
  turn: readonly M[],
  bounds: SessionBounds,
  startsTurn: (message: M) => boolean,
): SessionWithTurn<M> | undefined {
  const sizes = history.map(messageBytes);
  // `[a,b]`: the brackets, each message, and a comma between two.
  const arrayBytes = (messages: number, contentBytes: number) => 2 + contentBytes + Math.max(messages - 1, 0);
  const turnBytes = turn.reduce((sum, message) => sum + messageBytes(message), 0);
  const starts = turnStarts(history, startsTurn);

  let dropped = 0; // messages left out, always whole turns
  let droppedTurns = 0;
  let keptBytes = sizes.reduce((sum, size) => sum + size, 0);
  const size = () => arrayBytes(history.length - dropped + turn.length, keptBytes + turnBytes);
  const turns = () => starts.length - droppedTurns + 1;
  while ((size() > bounds.maxBytes || turns() > bounds.maxTurns) && droppedTurns < starts.length) {
    const nextStart = starts[droppedTurns + 1] ?? history.length;
    for (let i = dropped; i < nextStart; i++) keptBytes -= sizes[i]!;
    dropped = nextStart;
    droppedTurns += 1;
  }
  if (size() > bounds.maxBytes) return undefined;
  return { messages: [...history.slice(dropped), ...turn], dropped, bytes: size() };
}

/** What a trim goes down to, of each bound: once it must drop turns, it drops a quarter's room more. */
export const TRIM_TO_FRACTION = 3 / 4;

/**
 * sessionWithTurn, but a session that must drop turns drops them down to TRIM_TO_FRACTION of
 * `bounds`, when the turn fits there. A trim rewrites the whole session (agent services'
 * PUT: the runtime sends it, agent services parse, seal and store it whole), so trimming to
 * the limit would rewrite it on every turn of a long conversation; with room left, the turns
 * after a trim are appended, and the next trim comes a quarter of the limit later.
 */
export function sessionWithTurnTrimmingAhead<M>(
  history: readonly M[],
  turn: readonly M[],
  bounds: SessionBounds,
  startsTurn: (message: M) => boolean,
): SessionWithTurn<M> | undefined {
  const next = sessionWithTurn(history, turn, bounds, startsTurn);
  if (next === undefined || next.dropped === 0) return next;
  const roomier = { maxBytes: Math.floor(bounds.maxBytes * TRIM_TO_FRACTION), maxTurns: Math.max(1, Math.floor(bounds.maxTurns * TRIM_TO_FRACTION)) };
  return sessionWithTurn(history, turn, roomier, startsTurn) ?? next;
}

/** Where each turn of `history` begins; messages before the first user message count as a turn of their own. */
function turnStarts<M>(history: readonly M[], startsTurn: (message: M) => boolean): number[] {
  const starts: number[] = [];
  history.forEach((message, index) => {
    if (index === 0 || startsTurn(message)) starts.push(index);
  });
  return starts;
}

/**
 * Each message's size as JSON, kept with the message object. A held session's messages are the
 * same objects from turn to turn (held-sessions.ts), so a turn sizes only its own messages, not
 * the whole history again: sizing a history of 0.5 MB took 2.2 ms per turn, twice that at
 * SESSION_MAX_BYTES' default 1 MiB. Sound because a session's messages are never changed in
 * place: a turn adds messages and a trim drops them, and both make new arrays.
 */
const sizesOfMessages = new WeakMap<object, number>();

function messageBytes(message: unknown): number {
  if (typeof message !== 'object' || message === null) return jsonBytes(message);
  let size = sizesOfMessages.get(message);
  if (size === undefined) {
    size = jsonBytes(message);
    sizesOfMessages.set(message, size);
  }
  return size;
}

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? 'null');
}
