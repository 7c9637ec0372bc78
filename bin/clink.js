#!/usr/bin/env node
// The installed `clink` command: runs the built CLI (npm run build writes dist/).
import { existsSync } from 'node:fs';
const entry = new URL('../dist/cli/bin.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('clink is not built yet: run `npm run build` in the clink package first\n');
  process.exit(70);
}
await import(entry.href);
