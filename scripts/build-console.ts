/**
 * Builds the web console (console/src) into one folder the control API serves:
 * index.html plus assets/ with content-hashed names, so browsers may cache them for ever.
 * Everything is bundled (Preact, uPlot, the CSS): the console loads nothing from elsewhere.
 *
 *   node --import tsx scripts/build-console.ts [out-dir]   (default console/dist)
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const outDir = process.argv[2] ?? join(ROOT, 'console/dist');

await rm(outDir, { recursive: true, force: true });
await mkdir(outDir, { recursive: true });
const result = await build({
  entryPoints: [join(ROOT, 'console/src/main.tsx')],
  outdir: join(outDir, 'assets'),
  entryNames: '[name]-[hash]',
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  metafile: true,
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((path) => relative(outDir, join(process.cwd(), path)));
const script = outputs.find((path) => path.endsWith('.js'));
const style = outputs.find((path) => path.endsWith('.css'));
if (!script) throw new Error('esbuild wrote no script');

// No inline script or style: the page's Content-Security-Policy allows only files of its own origin.
const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent platform console</title>
${style ? `<link rel="stylesheet" href="/${style}">` : ''}
<script type="module" src="/${script}"></script>
</head>
<body><div id="app"></div></body>
</html>
`;
await writeFile(join(outDir, 'index.html'), html);
console.log(`console built in ${relative(ROOT, outDir) || outDir}: ${[script, style].filter(Boolean).map((path) => basename(path!)).join(', ')}`);
