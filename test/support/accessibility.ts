import type { Page } from 'playwright-core';

/**
 * Lighthouse's basic checks on what the page shows now: every visible form control has a
 * label (a <label>, aria-label or aria-labelledby), every visible button an accessible name,
 * and nothing is wider than the viewport (no sideways scrolling of the page).
 * Plain JavaScript in a string: tsx's transform would add helpers (__name) the page lacks.
 */
const CHECK = `(() => {
  const problems = [];
  const visible = (element) => element.offsetParent !== null || getComputedStyle(element).position === 'fixed';
  const describe = (element) => element.outerHTML.slice(0, 120);
  for (const control of document.querySelectorAll('input, select, textarea')) {
    if (!visible(control) || control.type === 'hidden') continue;
    const labelled = (control.labels && control.labels.length) || (control.getAttribute('aria-label') || '').trim() || control.getAttribute('aria-labelledby');
    if (!labelled) problems.push('unlabelled control: ' + describe(control));
  }
  for (const button of document.querySelectorAll('button, [role=button], [role=tab]')) {
    if (!visible(button)) continue;
    const name = (button.getAttribute('aria-label') || '').trim() || (button.textContent || '').trim();
    if (!name) problems.push('button without a name: ' + describe(button));
  }
  const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > width) problems.push('the page is ' + document.documentElement.scrollWidth + ' px wide in a ' + width + ' px viewport');
  return problems;
})()`;

/** The problems found, each described for the assertion message. */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  return page.evaluate(CHECK) as Promise<string[]>;
}
