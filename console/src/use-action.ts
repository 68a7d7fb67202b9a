import { useState } from 'preact/hooks';
import { messageOf } from './api.js';

/**
 * The last action of a panel, for <Outcome>: `act` runs `work`, then says `success` or shows
 * the API's refusal; it answers whether the work succeeded. `fail` shows a refusal met elsewhere
 * (a list that could not be read).
 */
export function useAction() {
  const [error, setError] = useState('');
  const [done, setDone] = useState('');
  const act = async (work: () => Promise<unknown>, success: string): Promise<boolean> => {
    setError('');
    setDone('');
    try {
      await work();
      setDone(success);
      return true;
    } catch (caught) {
      setError(messageOf(caught));
      return false;
    }
  };
  return { error, done, act, fail: (caught: unknown) => setError(messageOf(caught)) };
}
