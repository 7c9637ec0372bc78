/**
 * The type check before a job runs: the job's own files are checked (an imported helper of its too),
 * clink's declarations only read; a job runs on Node, so browser globals do not type-check; a verdict is
 * reused until a file it read changes.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { typecheckJob } from '../../src/loader/index.js';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clink-typecheck-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const job = (body: string, imports = '') =>
  `import { defineJob } from 'clink';\n${imports}\nexport default defineJob({ name: 't', version: '1' }, (env) => {\n${body}\n});\n`;

test('a type error in a helper the job imports is reported with its file and line; a fixed helper passes', async () => {
  await writeFile(join(dir, 'helper.ts'), 'export function twice(x: number): number {\n  return x.length;\n}\n');
  await writeFile(
    join(dir, 'uses-helper.ts'),
    job('  env.fromSequence(1, 3).map(twice).print();', "import { twice } from './helper.ts';"),
  );
  await assert.rejects(typecheckJob(join(dir, 'uses-helper.ts'), { cacheDir: join(dir, 'cache') }), (e: Error) => {
    assert.match(e.message, /helper\.ts:2:12: error TS2339: Property 'length' does not exist on type 'number'\./);
    return true;
  });
  await writeFile(join(dir, 'helper.ts'), 'export function twice(x: number): number {\n  return x * 2;\n}\n');
  const passed = await typecheckJob(join(dir, 'uses-helper.ts'), { cacheDir: join(dir, 'cache') });
  assert.equal(passed.checked && passed.cached, false);
  const again = await typecheckJob(join(dir, 'uses-helper.ts'), { cacheDir: join(dir, 'cache') });
  assert.equal(again.checked && again.cached, true);
});

test('browser globals are not there for a job (it runs on Node); a misuse of the SDK is an error', async () => {
  await writeFile(join(dir, 'dom.ts'), job("  document.title = 'x';\n  env.fromSequence(1, 3).keyBy(1).print();"));
  await assert.rejects(typecheckJob(join(dir, 'dom.ts'), { cacheDir: join(dir, 'cache') }), (e: Error) => {
    assert.match(e.message, /dom\.ts:4:3: error TS2584: Cannot find name 'document'/);
    assert.match(e.message, /dom\.ts:5:32: error TS2345: Argument of type 'number' is not assignable/);
    return true;
  });
});
