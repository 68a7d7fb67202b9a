import Router, { type Layer } from '@koa/router';
import type { Logger } from 'pino';
import type { AgentCredential } from '../../crypto/agent-token.js';
import { MessagesBudget } from '../../domain/agent-session.js';
import { PlatformError } from '../../domain/errors.js';
import { BatchBody, type BatchCall } from '../../schemas/agent-services-batch.js';
import { errorAnswer } from '../error-middleware.js';
import { readJsonBody } from '../json-body.js';
import { compileValidator } from '../validation.js';
import { agentServicesBodyLimit, answerAgentCall, compileAgentRoute, type AgentRoute, type AgentRouteResult, type CompiledAgentRoute } from './agent-route.js';

export interface BatchRouteOptions {
  /** SESSION_MAX_BYTES: the batch's body is bounded as a write's, and its answer's messages by it too (MessagesBudget). */
  maxSessionBytes: number;
  /** For the calls that fail unexpectedly or meet an outage, logged as the middleware logs a request's. */
  logger: Logger;
}

/** One call's answer, as the batch's answer carries it. */
interface CallAnswer {
  status: number;
  headers: Record<string, string>;
  /** JSON text, spliced into the answer as it is: a session's messages are sent as they were stored. */
  bodyText?: string;
}

/** The headers a call's answer keeps in a batch: the ones a Sessions API client reads. */
const KEPT_HEADERS = ['etag', 'retry-after'];

/**
 * `POST /v1/batch` (docs/contract.md, "Several calls in one request"): calls of `routes`,
 * each answered as it would have been alone, in one request. A replica serving fifty
 * conversations makes fifty calls at once; sent alone, each pays for its own request here
 * and in the runtime, and the last waits behind the other forty-nine.
 *
 * The calls run at once, so that the reads among them reach Postgres as one statement
 * (AgentSessionService's StatementBatches), and in no order. The reads share a
 * MessagesBudget: past SESSION_MAX_BYTES of sessions beside one, a read is 503
 * BATCH_ANSWER_FULL before its messages are opened. Each is checked, counted and
 * applied by the route that serves it alone (answerAgentCall), and its error rendered by
 * the one renderer (errorAnswer). The request's credential is every call's.
 */
export function mountBatchRoute(router: Router, routes: AgentRoute[], options: BatchRouteOptions): void {
  const limit = agentServicesBodyLimit(options.maxSessionBytes);
  const validateBatch = compileValidator(BatchBody, 'body');
  const findRoute = routeFinder(routes.map(compileAgentRoute));
  router.post('/v1/batch', async (ctx) => {
    const body = (await readJsonBody(ctx.req, limit)) ?? {};
    validateBatch(body);
    const credential = ctx.state.credential as AgentCredential;
    const requestId = ctx.state.requestId as string;
    // Shared by the calls: what the answer holds stays within two sessions' worth however many read.
    const answerBudget = new MessagesBudget(options.maxSessionBytes);
    const answers = await Promise.all(
      (body as BatchBody).calls.map((call) => answerCall(findRoute, call, credential, answerBudget).catch((error: unknown) => fromError(errorAnswer(error, options.logger, requestId)))),
    );
    ctx.type = 'application/json';
    ctx.body = `{"results":[${answers.map(resultText).join(',')}]}`;
  });
}

async function answerCall(findRoute: RouteFinder, call: BatchCall, credential: AgentCredential, answerBudget: MessagesBudget): Promise<CallAnswer> {
  const found = findRoute(call.method, call.path);
  if ('refusal' in found) throw found.refusal;
  const headers = call.headers ?? {};
  return fromResult(await answerAgentCall(found.compiled, { credential, params: found.params, body: call.body, headers, answerBudget }));
}

function fromResult(result: AgentRouteResult): CallAnswer {
  const headers = keptHeaders(result.headers ?? {});
  const bodyText = result.jsonText ?? (result.body === undefined ? undefined : JSON.stringify(result.body));
  return { status: result.status, headers, ...(bodyText === undefined ? {} : { bodyText }) };
}

const fromError = (answer: ReturnType<typeof errorAnswer>): CallAnswer => ({ status: answer.status, headers: keptHeaders(answer.headers), bodyText: JSON.stringify(answer.body) });

function keptHeaders(headers: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (KEPT_HEADERS.includes(name.toLowerCase())) kept[name.toLowerCase()] = value;
  return kept;
}

const resultText = (answer: CallAnswer) =>
  `{"status":${answer.status},"headers":${JSON.stringify(answer.headers)}${answer.bodyText === undefined ? '' : `,"body":${answer.bodyText}`}}`;

type RouteFinder = (method: string, path: string) => { compiled: CompiledAgentRoute; params: Record<string, string> } | { refusal: PlatformError };

/**
 * Which route a call's method and path name, found by a router of their own with the
 * router's own rules (@koa/router's match, captures and params: its trailing slash, its
 * URL-decoding), so a call in a batch names the route it would name alone. A path no route
 * has is 404 NOT_FOUND, one with other methods 405.
 */
function routeFinder(routes: CompiledAgentRoute[]): RouteFinder {
  const router = new Router();
  const byLayer = new Map<Layer, CompiledAgentRoute>();
  for (const compiled of routes) {
    router[compiled.route.method](compiled.route.path, () => undefined);
    byLayer.set(router.stack.at(-1)!, compiled);
  }
  return (method, path) => {
    const matched = router.match(path, method);
    const layer = matched.pathAndMethod.find((candidate) => byLayer.has(candidate));
    if (layer) return { compiled: byLayer.get(layer)!, params: layer.params(path, layer.captures(path)) };
    return { refusal: matched.path.length > 0 ? new PlatformError('METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}`) : new PlatformError('NOT_FOUND', 'No such Sessions API call') };
  };
}
