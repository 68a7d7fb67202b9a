import { CopyButton } from '../copy-button.js';
import { ConfirmButton } from '../confirm-button.js';
import type { Deployment } from '../types.js';

type Figures = NonNullable<Deployment['canary']>['figures']['stable'];
type Strategy = NonNullable<Deployment['strategy']>;
/** A deployment whose canary serves: its strategy and state are both there. */
export type ServingCanary = Deployment & { strategy: Strategy; canary: NonNullable<Deployment['canary']> };

export const isServingCanary = (deployment: Deployment): deployment is ServingCanary =>
  deployment.phase === 'canary' && deployment.canary !== null && deployment.strategy !== null;

/** The figures are the edge's last 60 s: the count is the rate per minute. */
const perMinute = (figures: Figures) => `${figures.request_count}/min`;
const errorRatio = (figures: Figures) =>
  figures.request_count === 0 ? 'no requests' : `${((figures.error_count / figures.request_count) * 100).toFixed(1)}% (${figures.error_count} of ${figures.request_count})`;
const p95 = (figures: Figures) => (figures.request_count === 0 ? '–' : `${Math.round(figures.p95_latency_ms)} ms`);
const ROWS: [string, (figures: Figures) => string][] = [['Requests', perMinute], ['5xx ratio', errorRatio], ['Latency p95', p95]];

const AFFINITY: Record<Strategy['affinity'], string> = { none: 'none (each request drawn anew)', caller: 'per caller (a caller stays on its version)' };

/**
 * The running canary of `deployment`: its share, both versions' figures side by side, its
 * settings, the preview URL and Promote / Abort (each after confirmation). `busy` disables
 * both while a request is in flight.
 */
export function CanaryPanel({ deployment, busy, onPromote, onAbort }: { deployment: ServingCanary; busy: boolean; onPromote: () => void; onAbort: () => void }) {
  const { canary, strategy, number } = deployment;
  const headingId = `canary-${deployment.id}`;
  return (
    <section class="canary" aria-labelledby={headingId}>
      <h2 id={headingId}>Canary: deployment #{number}</h2>
      <p><strong data-canary-share>{canary.percent}%</strong> of requests go to the new version, on {strategy.replicas} replica{strategy.replicas === 1 ? '' : 's'}; the rest to the stable version. Serving since <time dateTime={canary.started_at}>{new Date(canary.started_at).toLocaleString()}</time>.</p>
      <div class="table-scroll">
        <table>
          <caption>Both versions, last minute</caption>
          <thead><tr><th scope="col"><span class="visually-hidden">Figure</span></th><th scope="col">Stable</th><th scope="col">Canary (#{number})</th></tr></thead>
          <tbody>
            {ROWS.map(([name, show]) => (
              <tr key={name}><th scope="row">{name}</th><td>{show(canary.figures.stable)}</td><td>{show(canary.figures.canary)}</td></tr>
            ))}
          </tbody>
        </table>
      </div>
      <dl class="canary-settings">
        <dt>Affinity</dt><dd>{AFFINITY[strategy.affinity]}</dd>
        <dt>Auto-promote after</dt><dd>{strategy.auto_promote_after_seconds === null ? 'off (promote by hand)' : `${strategy.auto_promote_after_seconds} s`}</dd>
        <dt>Max 5xx ratio</dt><dd>{(strategy.max_error_ratio * 100).toFixed(1)}% (aborts above it)</dd>
        <dt>Min requests</dt><dd>{strategy.min_requests} before judging</dd>
      </dl>
      <p class="url-row">Preview (the new version only): <span class="url" id={`${headingId}-preview`}>{canary.preview_url}</span> <CopyButton text={canary.preview_url} label="Copy the preview URL" /></p>
      <div class="actions">
        <ConfirmButton label="Promote" groupLabel="Confirm promote" yes="Yes, promote" no="Keep the canary" disabled={busy} onConfirm={onPromote}
          question={<>Promote deployment #{number}: the new version takes all requests?</>} />
        <ConfirmButton label="Abort" groupLabel="Confirm abort" yes="Yes, abort" no="Keep the canary" disabled={busy} danger onConfirm={onAbort}
          question={<>Abort deployment #{number}: the stable version takes all requests again?</>} />
      </div>
    </section>
  );
}

/** The list's word on a deployment's strategy: a badge with the share while its canary serves, else a note that it was deployed as one. */
export function StrategyBadge({ deployment }: { deployment: Deployment }) {
  if (!deployment.strategy) return null;
  if (isServingCanary(deployment)) return <span class="status status-wait" data-phase="canary">canary {deployment.canary.percent}%</span>;
  return <span class="note">canary deploy</span>;
}
