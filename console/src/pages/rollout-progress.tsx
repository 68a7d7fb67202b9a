import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { useStream } from '../use-stream.js';

interface Step {
  phase: string;
  message: string;
  replica_id?: string;
}

/** The newest deployment's rollout, live from its event stream until its `end`. */
export function RolloutProgress({ agentId, version }: { agentId: string; version: number }) {
  const [deployment, setDeployment] = useState<{ id: string; number: number } | null>(null);
  const [steps, setSteps] = useState<Step[]>([]);
  const [ended, setEnded] = useState<string | null>(null);

  useEffect(() => {
    api<{ deployments: { id: string; number: number; agent_version: number }[] }>('GET', `/agents/${agentId}/deployments?page_size=1`).then(
      (answer) => {
        const newest = answer.deployments[0];
        if (newest && newest.id !== deployment?.id) {
          setDeployment(newest);
          setSteps([]);
          setEnded(null);
        }
      },
      // An agent that never deployed has no deployments: nothing to show.
      () => undefined,
    );
  }, [agentId, version]);

  const error = useStream(deployment ? `/agents/${agentId}/deployments/${deployment.id}/events` : null, (event) => {
    if (event.event === 'progress') setSteps((before) => [...before, event.data as Step]);
    if (event.event === 'end') setEnded((event.data as { status: string }).status);
  });

  if (!deployment) return null;
  const last = steps.at(-1);
  return (
    <div class="rollout" aria-live="polite">
      <strong>Deployment #{deployment.number}</strong>{' '}
      {ended ? <span data-rollout-end={ended}>{ended}</span> : <span>{last ? `${last.phase}: ${last.message}` : 'waiting for the first step'}</span>}
      {error && <span class="error"> {error}</span>}
      <ol class="steps">{steps.slice(-6).map((step) => <li>{step.phase}{step.replica_id ? ` (${step.replica_id.slice(0, 12)})` : ''}: {step.message}</li>)}</ol>
    </div>
  );
}
