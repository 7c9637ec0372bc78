// Runs every *.test.ts under test/ and src/ with node's test runner (via tsx). Node 20 neither finds
// .ts test files nor expands globs by itself, and a run with no files would pass silently, so the files
// are listed here and an empty list is an error.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

function find(dir, out = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory() && e.name !== 'node_modules' && !e.name.startsWith('.')) find(p, out);
    else if (e.isFile() && e.name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const filter = process.argv.slice(2);
let files = [...find('test'), ...find('src')].sort();
if (filter.length > 0) files = files.filter((f) => filter.some((x) => f.includes(x)));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=120000', ...files], {
  stdio: 'inherit',
});
process.exit(r.status ?? 1);
