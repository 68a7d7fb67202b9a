import assert from 'node:assert/strict';
import { CANARY_DEFAULTS, judgeCanary, type CanaryStrategy, type VersionFigures } from '../control/domain/canary.js';

describe('canary judgement (control/domain/canary.ts)', () => {
  const startedAt = new Date('2031-08-01T12:00:00.000Z');
  const after = (seconds: number) => new Date(startedAt.getTime() + seconds * 1000);
  const strategy: CanaryStrategy = { ...CANARY_DEFAULTS, percent: 10, autoPromoteAfterSeconds: 600 };
  const judge = (canary: VersionFigures, stable: VersionFigures, seconds = 30, overrides: Partial<CanaryStrategy> = {}) =>
    judgeCanary({ strategy: { ...strategy, ...overrides }, canary, stable, startedAt, now: after(seconds) });

  it('waits for min_requests before judging a ratio: early 500s abort nothing', () => {
    const verdict = judge({ requests: 49, errors: 30 }, { requests: 441, errors: 0 });
    assert.equal(verdict.action, 'wait');
    assert.match(verdict.action === 'wait' ? verdict.why : '', /49 of min_requests 50/);
  });

  it('aborts a canary answering 500 to half its requests once it has min_requests, with the figures in the reason', () => {
    const verdict = judge({ requests: 50, errors: 25 }, { requests: 450, errors: 0 });
    assert.equal(verdict.action, 'abort');
    assert.equal(verdict.action === 'abort' && verdict.reason, '5xx ratio 0.500 above max_error_ratio 0.05: canary 25 5xx of 50 (0.500), stable 0 5xx of 450 (0.000)');
  });

  it('aborts past twice the stable ratio plus 0.01 even under max_error_ratio', () => {
    const verdict = judge({ requests: 100, errors: 4 }, { requests: 900, errors: 9 });
    assert.equal(verdict.action, 'abort', 'canary 0.04 > 2 × 0.01 + 0.01 = 0.03');
    assert.match(verdict.action === 'abort' ? verdict.reason : '', /twice the stable version's plus 0\.01 \(0\.030\)/);
  });

  it('keeps a canary as flaky as its stable version: a provider failing both is not the new version\'s fault', () => {
    assert.equal(judge({ requests: 100, errors: 3 }, { requests: 900, errors: 27 }).action, 'wait', '0.03 ≤ max 0.05 and ≤ 2 × 0.03 + 0.01');
  });

  it('takes the bound as inclusive: exactly max_error_ratio is not above it', () => {
    assert.equal(judge({ requests: 100, errors: 5 }, { requests: 900, errors: 45 }).action, 'wait');
  });

  it('promotes once auto_promote_after_seconds have passed without a failure, even on few requests', () => {
    assert.equal(judge({ requests: 200, errors: 0 }, { requests: 1_800, errors: 1 }, 599).action, 'wait');
    const verdict = judge({ requests: 3, errors: 0 }, { requests: 30, errors: 0 }, 600);
    assert.equal(verdict.action, 'promote');
    assert.match(verdict.action === 'promote' ? verdict.reason : '', /no failure in 600 s: canary 0 5xx of 3/);
  });

  it('an abort wins over a due promotion', () => {
    assert.equal(judge({ requests: 60, errors: 30 }, { requests: 540, errors: 0 }, 10_000).action, 'abort');
  });

  it('never promotes on its own without auto_promote_after_seconds', () => {
    assert.equal(judge({ requests: 10_000, errors: 0 }, { requests: 90_000, errors: 0 }, 86_400, { autoPromoteAfterSeconds: null }).action, 'wait');
  });
});
