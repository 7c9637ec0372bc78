// Builds the web console (console/) into dist/console: one ES module, its CSS (uPlot's with ours) and
// index.html. Run by `npm run build`; everything it needs is in node_modules, nothing is fetched.
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'console');
await mkdir(out, { recursive: true });
await esbuild.build({
  entryPoints: [join(root, 'console', 'app.tsx')],
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: true,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outfile: join(out, 'console.js'),
  logLevel: 'warning',
});
const css = [
  await readFile(join(root, 'node_modules', 'uplot', 'dist', 'uPlot.min.css'), 'utf8'),
  await readFile(join(root, 'console', 'console.css'), 'utf8'),
];
await writeFile(join(out, 'console.css'), css.join('\n'));
await copyFile(join(root, 'console', 'index.html'), join(out, 'index.html'));
