import type { Agent } from './types.js';

const TONE: Record<Agent['status'], string> = {
  pending: 'wait', starting: 'wait', scaling: 'wait', running: 'good', stopped: 'idle', failed: 'bad', crashed: 'bad',
};

/** A status in words and in colour, so colour is never the only signal. */
export function StatusBadge({ status }: { status: Agent['status'] }) {
  return <span class={`status status-${TONE[status]}`} data-status={status}>{status}</span>;
}
