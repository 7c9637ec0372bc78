/**
 * `clink init <dir>`: a job project in one command. It depends on this clink (by path for a checkout,
 * by version for an installed package), so `import 'clink'` has types in the editor and in `tsc`,
 * `npx clink` is this clink, and `npm test` runs the example job's test with `runJob`.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import { basename, join, relative, resolve, sep } from 'node:path';
import { ClinkError, EnvironmentError } from '../errors.js';
import { clinkPackageRoot } from '../loader/index.js';
import { makeDirectory } from '../util/index.js';

export interface InitOptions {
  /** The project's package name. @default the directory's name */
  name?: string;
  /** How package.json names clink. @default `file:<this checkout>`, or `^<version>` when installed from a registry */
  clink?: string;
  /** Run `npm install` in the new project. @default true */
  install: boolean;
}

interface ClinkPackage {
  root: string;
  version: string;
  devDependencies: Record<string, string>;
}

function thisClink(): ClinkPackage {
  const root = clinkPackageRoot();
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    version: string;
    devDependencies?: Record<string, string>;
  };
  return { root, version: pkg.version, devDependencies: pkg.devDependencies ?? {} };
}

/** The same TypeScript, tsx and Node types this clink is developed with: versions known to work on Node 20. */
function devDependencies(clink: ClinkPackage): Record<string, string> {
  const pick = (name: string, fallback: string): string => clink.devDependencies[name] ?? fallback;
  return { '@types/node': pick('@types/node', '^20'), tsx: pick('tsx', '^4'), typescript: pick('typescript', '^5') };
}

const JOB = `// A clink job: a TypeScript module whose default export is made by defineJob.
// Run it: npx clink run src/job.ts --parallelism 4    (npx clink plan src/job.ts shows its plan)
import { defineJob, Windows } from 'clink';

export interface Click {
  user: number;
  ts: number;
}

export default defineJob({ name: 'clicks-per-minute', version: '1' }, (env) => {
  env
    .fromSource<Click>('datagen', {
      count: Number(env.params.count ?? 10_000),
      seed: 1,
      fields: { user: { kind: 'int', min: 1, max: 50 }, ts: { kind: 'timestamp', startMs: Date.UTC(2026, 0, 1), stepMs: 5, jitterMs: 1_000 } },
    })
    .uid('clicks') // a checkpoint finds an operator's state by its uid
    .assignTimestamps((c) => c.ts, { maxOutOfOrdernessMs: 1_000 })
    .keyBy((c) => c.user)
    .window(Windows.tumbling(60_000))
    .count()
    .uid('clicks-per-user')
    .collect('per user and minute');
});
`;

const TEST = `// The job's test: runJob runs it in this process and returns what collect() gathered.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runJob } from 'clink';
import job from '../src/job.ts';

test('every click is counted once, in a one-minute window of its user', async () => {
  const result = await runJob(job, { parallelism: 2, params: { count: '5000' } });
  const rows = result.collected['per user and minute'] as { key: number; start: number; end: number; count: number }[];
  assert.equal(rows.reduce((n, r) => n + r.count, 0), 5000);
  for (const r of rows) assert.equal(r.end - r.start, 60_000);
});
`;

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    target: 'ES2022',
    lib: ['ES2022'],
    module: 'ESNext',
    moduleResolution: 'Bundler',
    allowImportingTsExtensions: true,
    noEmit: true,
    skipLibCheck: true,
    esModuleInterop: true,
    types: ['node'],
  },
  include: ['src', 'test'],
};

function readme(name: string): string {
  return `# ${name}

A clink job project: \`src/job.ts\` is the job, \`test/job.test.ts\` its test.

\`\`\`sh
npm test                                   # the job's test (runJob, in this process)
npx clink run src/job.ts --parallelism 4   # run it on this machine (type-checked first)
npm run typecheck                          # tsc --noEmit
npx clink submit src/job.ts --wait         # run it on a cluster (--coordinator host:port, default 127.0.0.1:6123)
\`\`\`
`;
}

function runNpmInstall(dir: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    // npm's own output goes to standard error: standard output stays the command's.
    const child = spawn(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['install', '--no-audit', '--no-fund'], {
      cwd: dir,
      stdio: ['ignore', 2, 2],
    });
    child.on('error', (err) =>
      reject(
        new EnvironmentError(
          `cannot run npm install in ${dir}: ${err.message}; install it yourself (cd ${dir} && npm install), or pass --no-install`,
        ),
      ),
    );
    child.on('exit', (code) =>
      code === 0
        ? resolvePromise()
        : reject(
            new EnvironmentError(
              `npm install in ${dir} failed (exit ${code}); see its output above, then run it again there (the project files are written)`,
            ),
          ),
    );
  });
}

export async function initCommand(target: string, o: InitOptions): Promise<void> {
  const dir = resolve(target);
  if (existsSync(dir)) {
    const entries = await readdir(dir).catch(() => undefined);
    if (entries === undefined)
      throw new ClinkError(
        'CLINK_ERR_INVALID_ARGUMENT',
        `${target} exists and is not a directory; choose a new directory for the project`,
      );
    if (entries.filter((e) => e !== '.git').length > 0)
      throw new ClinkError(
        'CLINK_ERR_INVALID_ARGUMENT',
        `${target} is not empty; clink init makes a new project: choose a new or empty directory`,
      );
  }
  const clink = thisClink();
  const installed = clink.root.split(sep).includes('node_modules');
  const name =
    o.name ??
    (basename(dir)
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[._-]+/, '') ||
      'clink-job');
  const clinkSpec = o.clink ?? (installed ? `^${clink.version}` : `file:${clink.root}`);
  const pkg = {
    name,
    version: '0.1.0',
    private: true,
    type: 'module',
    engines: { node: '>=20' },
    scripts: {
      start: 'clink run src/job.ts',
      plan: 'clink plan src/job.ts',
      submit: 'clink submit src/job.ts --wait',
      typecheck: 'tsc --noEmit',
      test: 'node --import tsx --test test/*.test.ts',
    },
    dependencies: { clink: clinkSpec },
    devDependencies: devDependencies(clink),
    // npm 11 runs only the install scripts a project allows, and lists the rest. esbuild and msgpackr's
    // native part need theirs; a checkout of clink is built already (its prepare would rebuild it each time).
    allowScripts: {
      ...(clinkSpec.startsWith('file:') ? { [clinkSpec]: false } : {}),
      esbuild: true,
      'msgpackr-extract': true,
      'fs-ext': true,
      protobufjs: true,
    },
  };
  await makeDirectory(join(dir, 'src'));
  await makeDirectory(join(dir, 'test'));
  const files: Record<string, string> = {
    'package.json': JSON.stringify(pkg, null, 2) + '\n',
    'tsconfig.json': JSON.stringify(TSCONFIG, null, 2) + '\n',
    '.gitignore': 'node_modules/\n',
    'README.md': readme(name),
    'src/job.ts': JOB,
    'test/job.test.ts': TEST,
  };
  for (const [file, text] of Object.entries(files)) await writeFile(join(dir, file), text, { flag: 'wx' });
  const shown = relative(process.cwd(), dir) || '.';
  process.stderr.write(`created ${shown}: ${Object.keys(files).join(', ')} (clink ${pkg.dependencies.clink})\n`);
  if (o.install) await runNpmInstall(dir);
  const cd = shown === '.' ? '' : `cd ${shown} && `;
  process.stdout.write(
    `${o.install ? '' : `${cd}npm install\n`}${cd}npm test\n${cd}npx clink run src/job.ts --parallelism 4\n`,
  );
}
