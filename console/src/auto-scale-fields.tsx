import { Field } from './field.js';
import type { Agent } from './types.js';

/** The deploy's auto-scaling settings (docs/autoscaling.md), which the new-agent form and the agent page both edit. */
export type AutoScaleSettings = Pick<Agent['deploy'], 'auto_scale' | 'min_replicas' | 'max_replicas' | 'scale_to_zero_after_seconds' | 'warm_park_seconds'>;

/**
 * Min, max and the idle period, as inputs named for the deploy's fields and filled from
 * `saved`. Uncontrolled (defaultValue): a re-render of the page never undoes what is typed.
 */
export function AutoScaleBounds({ saved }: { saved: Partial<AutoScaleSettings> }) {
  const text = (value: number | undefined) => (value === undefined ? '' : String(value));
  return (
    <>
      <Field label="Min replicas" name="min_replicas" type="number" min={0} max={100} defaultValue={text(saved.min_replicas)} />
      <Field label="Max replicas" name="max_replicas" type="number" min={1} max={100} defaultValue={text(saved.max_replicas)} />
      <Field label="Park when idle for (seconds)" name="scale_to_zero_after_seconds" type="number" min={30} max={86400} placeholder="300" aria-describedby="park-note" defaultValue={text(saved.scale_to_zero_after_seconds)} />
      <Field label="Keep warm when parked for (seconds)" name="warm_park_seconds" type="number" min={0} max={86400} placeholder="600" aria-describedby="park-note" defaultValue={text(saved.warm_park_seconds)} />
    </>
  );
}

/** When the idle period counts, for the page that shows AutoScaleBounds (the park field names it as its description). */
export function ParkNote() {
  // docs/autoscaling.md, "Scale to zero": min_replicas 0 is allowed only with auto_scale, and only then is the agent parked.
  return (
    <p id="park-note" class="note">
      Parked when idle only with auto-scaling on and a minimum of 0; its next request wakes it. Kept warm, its replica is frozen in memory and wakes in about a tenth of a second, counting toward the plan's memory but not its replicas; after that it is stopped (podman only: on Nomad a parked agent is always stopped).
    </p>
  );
}

/** The settings as a deploy's fields, read from a form holding the checkbox `auto_scale` and AutoScaleBounds; an empty input is left out, so the deploy keeps its value. */
export function autoScaleInput(form: FormData): Partial<AutoScaleSettings> {
  const number = (name: string) => {
    const value = String(form.get(name) ?? '').trim();
    return value ? Number(value) : undefined;
  };
  return {
    auto_scale: form.get('auto_scale') !== null,
    min_replicas: number('min_replicas'),
    max_replicas: number('max_replicas'),
    scale_to_zero_after_seconds: number('scale_to_zero_after_seconds'),
    warm_park_seconds: number('warm_park_seconds'),
  };
}

/** What the saved settings mean, in a sentence. */
export function describeAutoScale(saved: AutoScaleSettings): string {
  if (!saved.auto_scale) return `Auto-scaling off; at most ${saved.max_replicas} replicas.`;
  const parking = saved.min_replicas === 0 ? `, parked after ${saved.scale_to_zero_after_seconds} s without requests` : '';
  return `Auto-scaling on: ${saved.min_replicas} to ${saved.max_replicas} replicas${parking}.`;
}
