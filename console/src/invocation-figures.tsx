import type { InvocationSummary } from './types.js';

/** An invocation's figures as the console and `agentctl invocations` write them. */

export const formatCost = (usd: number | null): string => (usd === null ? 'no price' : `$${usd.toFixed(6)}`);

export const formatMs = (ms: number): string => `${Math.round(ms)} ms`;

export const formatTokens = (input: unknown, output: unknown): string => `${String(input)} in, ${String(output)} out`;

export const invocationTokens = (invocation: InvocationSummary): string => formatTokens(invocation.input_tokens, invocation.output_tokens);

export const When = ({ at }: { at: string }) => <time dateTime={at}>{new Date(at).toLocaleString()}</time>;

/** ok or error in words and in colour, as StatusBadge draws an agent's. */
export const InvocationStatus = ({ status }: { status: InvocationSummary['status'] }) =>
  <span class={`status status-${status === 'ok' ? 'good' : 'bad'}`} data-status={status}>{status}</span>;
