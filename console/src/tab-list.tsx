import { useRef } from 'preact/hooks';

/**
 * Tabs as the WAI-ARIA tabs pattern has them, so the keyboard reaches every view: Tab enters
 * the list at the selected tab only, Left and Right arrows move and select (wrapping), Home
 * and End go to the first and last. Each tab names the panel it controls (`panelId`).
 */
export function TabList<Name extends string>({ label, names, selected, panelId, onSelect }: {
  label: string;
  names: readonly Name[];
  selected: Name;
  panelId: string;
  onSelect: (name: Name) => void;
}) {
  const buttons = useRef<(HTMLButtonElement | null)[]>([]);
  const onKeyDown = (event: KeyboardEvent, index: number) => {
    const last = names.length - 1;
    const moves: Record<string, number> = { ArrowRight: index === last ? 0 : index + 1, ArrowLeft: index === 0 ? last : index - 1, Home: 0, End: last };
    const to = moves[event.key];
    if (to === undefined) return;
    event.preventDefault();
    onSelect(names[to]!);
    buttons.current[to]?.focus();
  };

  return (
    <div role="tablist" aria-label={label} class="tabs">
      {names.map((name, index) => (
        <button
          type="button"
          role="tab"
          id={`${panelId}-tab-${index}`}
          aria-controls={panelId}
          aria-selected={selected === name}
          tabIndex={selected === name ? 0 : -1}
          ref={(element) => { buttons.current[index] = element; }}
          onClick={() => onSelect(name)}
          onKeyDown={(event) => onKeyDown(event, index)}
        >
          {name}
        </button>
      ))}
    </div>
  );
}
