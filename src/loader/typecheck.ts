/**
 * Type-check a job module before it runs, so a type error is reported as `file:line:col` instead of
 * surfacing as a TypeError mid-run. esbuild (the bundler) strips types without checking them.
 *
 * TypeScript is used when it can be found, from the job's directory first (a `clink init` project
 * has it), then beside clink; without it the check is skipped. The job's own tsconfig.json applies when
 * there is one; otherwise the settings a `clink init` project uses. `import 'clink'` resolves to this
 * clink's declarations when the job's directory has no clink of its own (a file "anywhere on disk").
 * A job that passed is not checked again while none of the files TypeScript read has changed.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as TS from 'typescript';
import { JobLoadError } from '../errors.js';
import { defaultCacheDir } from './load.js';
import { localSdk } from './gate.js';
import { clinkPackageRoot, statInputs, unchangedInputs, writeRecord, type FileInputs } from './input-record.js';
import { makeDirectory } from '../util/index.js';

export type TypecheckResult = { checked: true; cached: boolean; ms: number } | { checked: false; reason: string };

/** Errors shown in full; the rest are counted. */
const MAX_ERRORS_SHOWN = 10;

const TS_EXTENSIONS = /\.(ts|tsx|mts|cts)$/;

function loadTypescript(jobPath: string): typeof TS | undefined {
  for (const from of [jobPath, fileURLToPath(import.meta.url)]) {
    try {
      return createRequire(from)('typescript') as typeof TS;
    } catch {
      // not there: try the next place
    }
  }
  return undefined;
}

/** This clink's public declarations: what `import 'clink'` means for a job without a clink of its own. */
function clinkTypes(): string {
  // The declarations of the code that runs: built ones for dist/, the sources when run from src/ (tsx).
  return fileURLToPath(import.meta.url).endsWith('.ts')
    ? join(clinkPackageRoot(), 'src/index.ts')
    : join(clinkPackageRoot(), 'dist/index.d.ts');
}

function hasModule(ts: typeof TS, name: string, from: string, options: TS.CompilerOptions): boolean {
  return ts.resolveModuleName(name, from, options, ts.sys).resolvedModule !== undefined;
}

function compilerOptions(ts: typeof TS, jobPath: string): TS.CompilerOptions {
  const configPath = ts.findConfigFile(dirname(jobPath), (f) => ts.sys.fileExists(f));
  let options: TS.CompilerOptions;
  if (configPath) {
    const parsed = ts.getParsedCommandLineOfConfigFile(
      configPath,
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
    );
    options = parsed?.options ?? {};
  } else {
    // Bundler resolution is what esbuild does with the job.
    // A job runs on Node, not in a browser: no DOM types (lib.dom.d.ts alone was a fifth of the time).
    options = {
      lib: ['lib.es2022.d.ts'],
      strict: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      allowImportingTsExtensions: true,
      esModuleInterop: true,
      resolveJsonModule: true,
    };
  }
  options = { ...options, noEmit: true, skipLibCheck: true, incremental: false, composite: false };
  delete options.tsBuildInfoFile;
  if (!hasModule(ts, 'clink', jobPath, options)) options.paths = { ...options.paths, clink: [clinkTypes()] };
  // Node's own types from the job's node_modules up the tree, else this clink's: without them a
  // `node:` import does not resolve. A tsconfig.json of the job's says for itself.
  if (!configPath) {
    const roots: string[] = [];
    for (let d = dirname(jobPath); ; d = dirname(d)) {
      roots.push(join(d, 'node_modules/@types'));
      if (dirname(d) === d) break;
    }
    roots.push(join(clinkPackageRoot(), 'node_modules/@types'));
    options.typeRoots = [...new Set(roots.filter((r) => existsSync(r)))];
    options.types = options.typeRoots.some((r) => existsSync(join(r, 'node'))) ? ['node'] : [];
  }
  return options;
}

interface TypecheckRecord {
  key: string;
  inputs: FileInputs;
}

function format(ts: typeof TS, d: TS.Diagnostic): string {
  const text = ts.flattenDiagnosticMessageText(d.messageText, '\n    ');
  if (!d.file || d.start === undefined) return `error TS${d.code}: ${text}`;
  const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
  const file = relative(process.cwd(), d.file.fileName) || d.file.fileName;
  return `${file}:${line + 1}:${character + 1}: error TS${d.code}: ${text}`;
}

/**
 * Throws JobLoadError listing the type errors (`file:line:col: error TSnnnn: ...`); resolves with
 * what it did otherwise.
 */
export async function typecheckJob(path: string, options: { cacheDir?: string } = {}): Promise<TypecheckResult> {
  const jobPath = resolve(path);
  if (!TS_EXTENSIONS.test(jobPath)) return { checked: false, reason: 'not a TypeScript file' };
  if (!existsSync(jobPath)) return { checked: false, reason: 'no such file' }; // the loader says so, better
  const ts = loadTypescript(jobPath);
  if (!ts) return { checked: false, reason: 'TypeScript is not installed' };
  const t0 = performance.now();
  const cacheDir = options.cacheDir ?? defaultCacheDir();
  const key = createHash('sha256')
    .update(`${jobPath}\0${ts.version}\0${localSdk().fingerprint}`)
    .digest('hex')
    .slice(0, 32);
  const recordPath = join(cacheDir, `typecheck-${key}.json`);
  const record = await readFile(recordPath, 'utf8')
    .then((t) => JSON.parse(t) as TypecheckRecord)
    .catch(() => undefined);
  if (record?.key === key && (await unchangedInputs(record.inputs)))
    return { checked: true, cached: true, ms: performance.now() - t0 };

  const program = ts.createProgram({ rootNames: [jobPath], options: compilerOptions(ts, jobPath) });
  // The job's files are checked; clink's own (its sources when run through tsx, its declarations
  // otherwise) and installed packages' declarations are only read for the types the job uses: checking
  // every body of clink's sources took 10-20 s of CPU a job, the job's own files well under one.
  const sdkDirs = ['src', 'dist'].map((d) => join(clinkPackageRoot(), d) + sep);
  const jobsOwn = program
    .getSourceFiles()
    .filter(
      (f) =>
        !program.isSourceFileDefaultLibrary(f) &&
        !sdkDirs.some((d) => f.fileName.startsWith(d)) &&
        !(f.isDeclarationFile && f.fileName.includes('/node_modules/')),
    );
  // A syntax error is the bundler's to report, with its own excerpt of the line.
  if (jobsOwn.some((f) => program.getSyntacticDiagnostics(f).length > 0))
    return { checked: false, reason: 'syntax errors' };
  const diagnostics = [
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...jobsOwn.flatMap((f) => program.getSemanticDiagnostics(f)),
  ].filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (diagnostics.length > 0) {
    const shown = diagnostics.slice(0, MAX_ERRORS_SHOWN).map((d) => format(ts, d));
    const more = diagnostics.length > MAX_ERRORS_SHOWN ? `\n... and ${diagnostics.length - MAX_ERRORS_SHOWN} more` : '';
    throw new JobLoadError(
      `job module ${path} does not type-check (--no-typecheck runs it anyway):\n${shown.join('\n')}${more}`,
    );
  }
  // The files that can change the verdict: the job's own, not declarations of installed packages.
  const read = program
    .getSourceFiles()
    .filter(
      (f) => !(f.isDeclarationFile && f.fileName.includes('/node_modules/')) && !program.isSourceFileDefaultLibrary(f),
    );
  const inputs = await statInputs(read.map((f) => f.fileName));
  await makeDirectory(cacheDir);
  await writeRecord(recordPath, { key, inputs } satisfies TypecheckRecord);
  return { checked: true, cached: false, ms: performance.now() - t0 };
}
