import { useState } from 'preact/hooks';

/** Copies `text` to the clipboard and says so, or says that the browser refused. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [said, setSaid] = useState('');
  const copy = () => navigator.clipboard.writeText(text).then(() => setSaid('Copied'), () => setSaid('Copy refused by the browser: select the text instead'));
  return (
    <>
      <button type="button" aria-label={label} onClick={copy}>Copy</button>
      <span role="status" class="note">{said}</span>
    </>
  );
}
