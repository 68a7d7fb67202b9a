import type { ModelMessage } from 'ai';
import type { AgentRunner } from './agent-runner.js';
import { notConfigured, type RuntimeError } from './errors.js';
import type { KeyedLock } from './keyed-lock.js';
import type { SessionStore } from './session-store.js';

export interface InvokeRequest {
  input: string;
  /** Absent starts a new conversation; an unknown id starts one under that id. */
  sessionId: string | undefined;
  onTextDelta?: (text: string) => void;
}

export interface InvokeResult {
  output: string;
  sessionId: string;
}

export interface InvokeServiceDeps {
  /** Undefined when the agent is not configured; `notConfiguredReason` then says why. */
  runner: AgentRunner | undefined;
  notConfiguredReason: string | undefined;
  sessions: SessionStore<ModelMessage>;
  sessionLock: KeyedLock;
  newSessionId: () => string;
  /** Maps a failure of the model call to a caller-safe error, or undefined when it is not the provider's. */
  classifyFailure: (error: unknown) => RuntimeError | undefined;
}

export interface InvokeService {
  invoke(request: InvokeRequest): Promise<InvokeResult>;
}

/**
 * One invoke: the session's history, a turn of the agent, the history saved.
 * A failed turn leaves the history as it was, so the caller can retry it.
 */
export function createInvokeService(deps: InvokeServiceDeps): InvokeService {
  return {
    async invoke(request) {
      const runner = deps.runner;
      if (runner === undefined) throw notConfigured(deps.notConfiguredReason ?? 'no model');
      const sessionId = request.sessionId ?? deps.newSessionId();
      return deps.sessionLock.run(sessionId, async () => {
        const history = deps.sessions.history(sessionId);
        const turn = await runner
          .runTurn({ history, input: request.input, onTextDelta: request.onTextDelta })
          .catch((error: unknown) => {
            throw deps.classifyFailure(error) ?? error;
          });
        deps.sessions.appendTurn(sessionId, turn.messages);
        return { output: turn.output, sessionId };
      });
    },
  };
}
