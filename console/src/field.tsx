import type { InputHTMLAttributes } from 'preact';

type InputProps = InputHTMLAttributes<HTMLInputElement>;

/** An input with its visible label: every field of the console is named for screen readers. */
export function Field({ label, ...input }: { label: string } & InputProps) {
  return (
    <label class="field">
      <span>{label}</span>
      <input {...input} />
    </label>
  );
}
