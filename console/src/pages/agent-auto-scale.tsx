import { AutoScaleBounds, autoScaleInput, describeAutoScale, ParkNote, type AutoScaleSettings } from '../auto-scale-fields.js';

/**
 * The agent's auto-scaling settings as saved, and a form to change them; `onSave` gets only
 * those fields, for a deploy (the rest of the deploy keeps its values). All inputs show at
 * once, unlike the new-agent form's: turning auto-scaling off needs a minimum of 1 or more.
 * Give it `key={autoScaleKey(saved)}`: the page's refresh then keeps what is typed, and a
 * save shows what was saved.
 */
export function AutoScaleForm({ saved, onSave }: { saved: AutoScaleSettings; onSave: (input: Partial<AutoScaleSettings>) => void }) {
  return (
    <form class="auto-scale" onSubmit={(event) => {
      event.preventDefault();
      onSave(autoScaleInput(new FormData(event.currentTarget)));
    }}>
      <p class="auto-scale-saved">{describeAutoScale(saved)}</p>
      <div class="auto-scale-fields">
        <label class="check"><input type="checkbox" name="auto_scale" defaultChecked={saved.auto_scale} /> Auto-scale</label>
        <AutoScaleBounds saved={saved} />
        <button type="submit">Save auto-scaling</button>
      </div>
      <ParkNote />
    </form>
  );
}

/** Changes exactly when one of the saved settings does. */
export const autoScaleKey = (saved: AutoScaleSettings): string =>
  [saved.auto_scale, saved.min_replicas, saved.max_replicas, saved.scale_to_zero_after_seconds, saved.warm_park_seconds].join('/');
