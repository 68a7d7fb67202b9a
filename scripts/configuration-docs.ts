import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { renderConfigurationReference } from './lib/configuration-reference.js';

/**
 * `npm run config:docs`: rewrites docs/configuration.md from the settings readers
 * (scripts/lib/configuration-reference.ts). Run it after adding or changing a setting;
 * test/configuration-docs.test.ts fails until the page matches.
 */
const path = join(resolve(import.meta.dirname, '..'), 'docs', 'configuration.md');
writeFileSync(path, renderConfigurationReference());
console.log(`wrote ${path}`);
