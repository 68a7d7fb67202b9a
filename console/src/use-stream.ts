import { useEffect, useState } from 'preact/hooks';
import { messageOf } from './api.js';
import { followStream, type StreamEvent } from './sse.js';

/**
 * Follows a /v1 event stream while the component shows (and restarts it when `path` changes);
 * returns the stream's failure to show, if any. A null path follows nothing.
 */
export function useStream(path: string | null, onEvent: (event: StreamEvent) => void): string {
  const [error, setError] = useState('');
  useEffect(() => {
    if (!path) return undefined;
    const controller = new AbortController();
    setError('');
    followStream(path, onEvent, controller.signal).catch((caught) => {
      if (!controller.signal.aborted) setError(messageOf(caught));
    });
    return () => controller.abort();
  }, [path]);
  return error;
}
