import type { Context } from 'mocha';

/**
 * For a describe whose tests are steps of one session, each starting where the one before
 * left the page: after a failed step the rest fail at once, naming it, instead of waiting out
 * their timeouts on a page in the wrong state.
 */
export function stepsInOrder(): void {
  let failedStep: string | undefined;
  beforeEach(function () {
    if (failedStep) throw new Error(`not run: the earlier step "${failedStep}" failed`);
  });
  afterEach(function (this: Context) {
    if (this.currentTest?.state === 'failed') failedStep ??= this.currentTest.title;
  });
}
