import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

interface Props {
  /** The button's text, and the action the question confirms. */
  label: string;
  /** The button's accessible name where its text alone does not say what it acts on, e.g. "Delete session conv-1" beside others in a table. */
  name?: string;
  /** The question asked before acting, e.g. "Promote deployment #3?". */
  question: ComponentChildren;
  /** The answer that acts ("Yes, promote") and the one that does not ("Keep the canary"). */
  yes: string;
  no: string;
  /** Names the group of the question for assistive technology, e.g. "Confirm promote". */
  groupLabel: string;
  disabled?: boolean;
  danger?: boolean;
  onConfirm: () => void;
}

/**
 * A button that asks before it acts. The keyboard follows the question: to its safe answer
 * when asked, back to the button when kept.
 */
export function ConfirmButton({ label, name, question, yes, no, groupLabel, disabled = false, danger = false, onConfirm }: Props) {
  const [asking, setAsking] = useState(false);
  const safe = useRef<HTMLButtonElement>(null);
  const trigger = useRef<HTMLButtonElement>(null);
  const wasAsking = useRef(false);
  useEffect(() => {
    if (asking) safe.current?.focus();
    else if (wasAsking.current) trigger.current?.focus();
    wasAsking.current = asking;
  }, [asking]);

  const tone = danger ? 'danger' : undefined;
  if (!asking) return <button type="button" class={tone} ref={trigger} aria-label={name} disabled={disabled} onClick={() => setAsking(true)}>{label}</button>;
  return (
    <span role="group" aria-label={groupLabel} class="confirm">
      {question}{' '}
      <button type="button" class={tone} disabled={disabled} onClick={() => { setAsking(false); onConfirm(); }}>{yes}</button>
      <button type="button" ref={safe} onClick={() => setAsking(false)}>{no}</button>
    </span>
  );
}
