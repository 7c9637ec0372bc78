// `clink init` end to end: a new project, installed from this checkout (npm install, with the registry
// for TypeScript, tsx and Node's types), type-checked, run with npx clink, tested with npm test.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ROOT, runCli, type CliRun } from '../harness/cli.js';

function sh(command: string, args: string[], cwd: string): Promise<CliRun> {
  return new Promise((res, rej) => {
    // NODE_TEST_CONTEXT would make the project's own node --test report to this runner, not print.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const child = spawn(command, args, { cwd, env: { ...env, CLINK_CACHE_DIR: join(cwd, '.cache') } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', rej);
    child.on('close', (code) => res({ code, stdout, stderr }));
  });
}

describe('clink init', () => {
  let dir: string;
  let project: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'clink-init-'));
    project = join(dir, 'clicks');
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('makes a project that installs, type-checks, runs and tests in one go', { timeout: 240_000 }, async () => {
    const init = await runCli(['init', 'clicks'], dir, 180_000);
    assert.equal(init.code, 0, init.stderr);
    assert.equal(init.stdout, 'cd clicks && npm test\ncd clicks && npx clink run src/job.ts --parallelism 4\n');
    assert.match(
      init.stderr,
      /^created clicks: package\.json, tsconfig\.json, \.gitignore, README\.md, src\/job\.ts, test\/job\.test\.ts \(clink file:/,
    );
    const pkg = JSON.parse(await readFile(join(project, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    assert.equal(pkg.dependencies.clink, `file:${ROOT}`);
    const ours = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    assert.equal(pkg.devDependencies.typescript, ours.devDependencies.typescript);

    const tsc = await sh('npx', ['tsc', '--noEmit'], project);
    assert.equal(tsc.code, 0, tsc.stdout + tsc.stderr);
    const run = await sh(
      'npx',
      ['clink', 'run', 'src/job.ts', '--workers', '0', '--output', 'json', '--param', 'count=3000'],
      project,
    );
    assert.equal(run.code, 0, run.stderr);
    const rows = (JSON.parse(run.stdout) as Record<string, { count: number }[]>)['per user and minute']!;
    assert.equal(
      rows.reduce((n, r) => n + r.count, 0),
      3000,
    );
    const npmTest = await sh('npm', ['test'], project);
    assert.equal(npmTest.code, 0, npmTest.stdout + npmTest.stderr);
    assert.match(npmTest.stdout, /# pass 1\n# fail 0/);

    await appendFile(join(project, 'src/job.ts'), "export const wrong: number = 'one';\n");
    const mistyped = await sh('npx', ['clink', 'run', 'src/job.ts', '--workers', '0'], project);
    assert.equal(mistyped.code, 1);
    assert.match(
      mistyped.stderr,
      /^error: job module src\/job\.ts does not type-check \(--no-typecheck runs it anyway\):\nsrc\/job\.ts:\d+:14: error TS2322: Type 'string' is not assignable to type 'number'\.$/m,
    );
  });

  test('refuses a directory that is not empty, touching nothing', async () => {
    const taken = join(dir, 'taken');
    await runCli(['init', 'taken', '--no-install'], dir);
    await writeFile(join(taken, 'src/job.ts'), '// mine\n');
    const again = await runCli(['init', 'taken', '--no-install'], dir);
    assert.equal(again.code, 1);
    assert.equal(
      again.stderr,
      'error: taken is not empty; clink init makes a new project: choose a new or empty directory\n',
    );
    assert.equal(await readFile(join(taken, 'src/job.ts'), 'utf8'), '// mine\n');
  });
});
