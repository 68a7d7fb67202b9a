import type { ModelMessage } from 'ai';
import type { AgentRunner } from './agent-runner.js';
import { notConfigured, type RuntimeError } from './errors.js';
import type { KeyedLock } from './keyed-lock.js';
import type { SessionStore } from './session-store.js';
import type { InvokeTrace } from './tracing/spans.js';

export interface InvokeRequest {
  input: string;
  /** Absent starts a new conversation; an unknown id starts one under that id. */
  sessionId: string | undefined;
  onTextDelta?: (text: string) => void;
  trace?: InvokeTrace;
}

export interface InvokeResult {
  output: string;
  sessionId: string;
  /** Where the invoke's time went, in milliseconds: what the route sends as Server-Timing. */
  timings: InvokeTimings;
}

export interface InvokeTimings {
  /** Reading the session's history, from agent services or memory. */
  sessionReadMs: number;
  /** The agent's turn: the model, and any tools it called. */
  turnMs: number;
  /** Keeping the turn in the session. */
  sessionWriteMs: number;
}

export interface InvokeServiceDeps {
  /** Undefined when the agent is not configured; `notConfiguredReason` then says why. */
  runner: AgentRunner | undefined;
  notConfiguredReason: string | undefined;
  /** Agent services or memory; which one is no concern of an invoke. */
  sessions: SessionStore<ModelMessage>;
  /** Serialises a session's invokes within this replica; across replicas the store's versions do. */
  sessionLock: KeyedLock;
  newSessionId: () => string;
  /** Maps a failure of the model call to a caller-safe error, or undefined when it is not the provider's. */
  classifyFailure: (error: unknown) => RuntimeError | undefined;
  /** Milliseconds on a monotonic clock, for the timings; performance.now unless a test sets it. */
  now?: () => number;
}

export interface InvokeService {
  invoke(request: InvokeRequest): Promise<InvokeResult>;
}

/**
 * One invoke: the session's history, a turn of the agent, the history saved.
 * A failed turn leaves the history as it was, so the caller can retry it; so does
 * a session that cannot be read, since no turn runs without its history.
 */
export function createInvokeService(deps: InvokeServiceDeps): InvokeService {
  const now = deps.now ?? (() => performance.now());
  return {
    async invoke(request) {
      const runner = deps.runner;
      if (runner === undefined) throw notConfigured(deps.notConfiguredReason ?? 'no model');
      const sessionId = request.sessionId ?? deps.newSessionId();
      return deps.sessionLock.run(sessionId, async () => {
        // Timed once the session is this invoke's: waiting for another invoke of it is the caller's doing, not the store's.
        const started = now();
        // A conversation the caller did not name is new: there is nothing to read.
        const session = await (request.sessionId === undefined ? deps.sessions.start(sessionId) : deps.sessions.open(sessionId));
        const read = now();
        const turn = await runner
          .runTurn({ history: session.history, input: request.input, onTextDelta: request.onTextDelta, trace: request.trace })
          .catch((error: unknown) => {
            throw deps.classifyFailure(error) ?? error;
          });
        const turned = now();
        await session.appendTurn(turn.messages);
        const timings = { sessionReadMs: read - started, turnMs: turned - read, sessionWriteMs: now() - turned };
        return { output: turn.output, sessionId, timings };
      });
    },
  };
}
