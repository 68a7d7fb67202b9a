import { useState } from 'preact/hooks';
import { useStream } from '../use-stream.js';

interface LogLine {
  timestamp: string;
  level: string;
  replica_id: string;
  message: string;
}

const KEPT = 500;
const LEVELS = ['debug', 'info', 'warn', 'error'];

/** Live logs from the logs stream, filtered by lowest level and by replica on the server. */
export function LogsTab({ agentId }: { agentId: string }) {
  const [level, setLevel] = useState('');
  const [replica, setReplica] = useState('');
  const [lines, setLines] = useState<LogLine[]>([]);
  const query = new URLSearchParams({ ...(level ? { level } : {}), ...(replica ? { replica_id: replica } : {}) });
  const error = useStream(`/agents/${agentId}/logs/stream?${query}`, (event) => {
    if (event.event === 'log') setLines((before) => [...before, event.data as LogLine].slice(-KEPT));
  });
  const restart = (apply: () => void) => { setLines([]); apply(); };

  return (
    <div>
      <div class="filters">
        <label class="field inline">
          <span>Lowest level</span>
          <select value={level} onChange={(event) => restart(() => setLevel(event.currentTarget.value))}>
            <option value="">all</option>
            {LEVELS.map((value) => <option value={value}>{value}</option>)}
          </select>
        </label>
        <label class="field inline">
          <span>Replica</span>
          <input value={replica} placeholder="all" onChange={(event) => restart(() => setReplica(event.currentTarget.value.trim()))} />
        </label>
      </div>
      {error && <p role="alert" class="error">{error}</p>}
      <ol class="logs" aria-label="Log lines" aria-live="polite">
        {lines.map((line) => (
          <li class={`log log-${line.level}`}>
            <time dateTime={line.timestamp}>{line.timestamp.slice(11, 19)}</time> <span class="level">{line.level}</span> <span class="replica">{line.replica_id.slice(0, 12)}</span> {line.message}
          </li>
        ))}
      </ol>
      {lines.length === 0 && !error && <p class="note">Waiting for log lines…</p>}
    </div>
  );
}
