import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rename, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as esbuild from 'esbuild';
import { ClinkError, JobDefinitionError, JobLoadError } from '../errors.js';
import { buildJob, isJobDefinition, type JobDefinition } from '../sdk/index.js';
import type { JobGraphSpec } from '../plan/index.js';
import { banner, bundleSdk, checkSdkCompatibility, localSdk, type SdkIdentity } from './gate.js';
import { statInputs, unchangedInputs, writeRecord, type FileInputs } from './input-record.js';
import { makeDirectory } from '../util/index.js';

export interface CompiledJob {
  /** The bundled ESM module. Its SHA-256 (over the code alone) is its identity. */
  code: Uint8Array;
  sha256: string;
  /** Its source map, shipped beside it so stack traces point at the author's lines. */
  sourceMap: Uint8Array;
  /** The SDK it was built against (also in its first line). */
  sdk: SdkIdentity;
}

export interface LoadedJob extends CompiledJob {
  job: JobDefinition;
  /** The job file as given, resolved. */
  sourcePath: string;
  /** The cached bundle that was imported. */
  bundlePath: string;
}

/**
 * A bundle imports the SDK through this placeholder specifier; each process that loads the bundle binds
 * it to its own engine's SDK. The shipped bytes (and so their hash) do not depend on where they were built.
 */
export const SDK_PLACEHOLDER = '__clink_sdk__';

/** The SDK entry of this engine: what a job's `import 'clink'` becomes. */
export function sdkEntryPath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const js = join(here, '..', 'index.js');
  return existsSync(js) ? js : join(here, '..', 'index.ts');
}

export function defaultCacheDir(): string {
  return process.env.CLINK_CACHE_DIR ?? join(tmpdir(), 'clink-jobs');
}

function formatBuildErrors(errors: esbuild.Message[]): string {
  return errors
    .map((m) => {
      const loc = m.location;
      if (!loc) return m.text;
      return `${loc.file}:${loc.line}:${loc.column + 1}: ${m.text}\n    ${loc.lineText}\n    ${' '.repeat(loc.column)}^`;
    })
    .join('\n');
}

interface CompileRecord {
  fingerprint: string;
  sha256: string;
  /** Every file esbuild read, with the size and mtime it had. */
  inputs: FileInputs;
}

const compileRecordPath = (cacheDir: string, sourcePath: string): string =>
  join(cacheDir, `compile-${createHash('sha256').update(sourcePath).digest('hex').slice(0, 32)}.json`);

/**
 * Bundle a job file, reusing the last bundle of it while every file esbuild read is unchanged (same
 * size and mtime) and the SDK is the same. The same sources give the same bytes, hence the same SHA-256.
 */
export async function compileJobModule(path: string, options: { cacheDir?: string } = {}): Promise<CompiledJob> {
  const sourcePath = resolve(path);
  const cacheDir = options.cacheDir ?? defaultCacheDir();
  const recordPath = compileRecordPath(cacheDir, sourcePath);
  const record = await readFile(recordPath, 'utf8')
    .then((t) => JSON.parse(t) as CompileRecord)
    .catch(() => undefined);
  if (record && record.fingerprint === localSdk().fingerprint && (await unchangedInputs(record.inputs))) {
    const [code, sourceMap] = await Promise.all([
      readFile(join(cacheDir, `${record.sha256}.code`)),
      readFile(join(cacheDir, `${record.sha256}.map`)),
    ]).catch(() => [undefined, undefined]);
    if (code && sourceMap && createHash('sha256').update(code).digest('hex') === record.sha256) {
      return { code, sha256: record.sha256, sourceMap, sdk: localSdk() };
    }
  }
  const compiled = await compileFresh(sourcePath, path);
  await makeDirectory(cacheDir);
  await Promise.all([
    writeFile(join(cacheDir, `${compiled.sha256}.code`), compiled.code),
    writeFile(join(cacheDir, `${compiled.sha256}.map`), compiled.sourceMap),
  ]);
  const inputs = await statInputs(compiled.inputs);
  await writeRecord(recordPath, {
    fingerprint: compiled.sdk.fingerprint,
    sha256: compiled.sha256,
    inputs,
  } satisfies CompileRecord);
  const { inputs: _, ...job } = compiled;
  return job;
}

async function compileFresh(sourcePath: string, path: string): Promise<CompiledJob & { inputs: string[] }> {
  let st;
  try {
    st = await stat(sourcePath);
  } catch {
    throw new JobLoadError(`job file not found: ${path} (resolved to ${sourcePath})`);
  }
  if (!st.isFile()) throw new JobLoadError(`job path is not a file: ${path}`);
  if (/\.sql$/i.test(sourcePath))
    throw new JobLoadError(
      `${path} is SQL, not a job module: run it with clink sql -f ${path} (--mode explain to check it), or make a job module of it with clink sql -f ${path} --mode compile`,
    );
  // esbuild is loaded only when a module must actually be bundled.
  const { build } = await import('esbuild');
  let result: esbuild.BuildResult & { outputFiles: esbuild.OutputFile[]; metafile?: esbuild.Metafile };
  try {
    result = await build({
      entryPoints: [sourcePath],
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      write: false,
      outfile: 'job.mjs',
      sourcemap: 'external',
      // Stack frames of user code name the job file where it lives, not the cached bundle.
      sourceRoot: pathToFileURL(dirname(sourcePath)).href + '/',
      banner: { js: banner(localSdk()) },
      metafile: true,
      logLevel: 'silent',
      absWorkingDir: dirname(sourcePath),
      plugins: [
        {
          name: 'clink-sdk',
          setup(build) {
            build.onResolve({ filter: /^clink$/ }, () => ({ path: SDK_PLACEHOLDER, external: true }));
          },
        },
      ],
    });
  } catch (err) {
    const errors = (err as { errors?: esbuild.Message[] }).errors;
    if (errors?.length)
      throw new JobLoadError(`job module ${path} does not compile:\n${formatBuildErrors(errors)}`, { cause: err });
    throw new JobLoadError(`job module ${path} does not compile: ${(err as Error).message}`, { cause: err });
  }
  const js = result.outputFiles.find((f) => f.path.endsWith('.mjs'))!;
  const map = result.outputFiles.find((f) => f.path.endsWith('.map'));
  // The map is named at load time; the hash covers the code alone, wherever it was built.
  const code = Buffer.from(js.text.replace(/\n\/\/# sourceMappingURL=\S+\n?$/, '\n'));
  return {
    code,
    sha256: createHash('sha256').update(code).digest('hex'),
    sourceMap: map ? map.contents : new Uint8Array(0),
    sdk: localSdk(),
    inputs: Object.keys(result.metafile?.inputs ?? {}).map((f) => resolve(dirname(sourcePath), f)),
  };
}

/** Compile, cache by content hash, import, and check the default export is a job. */
export async function loadJobModule(path: string, options: { cacheDir?: string } = {}): Promise<LoadedJob> {
  const compiled = await compileJobModule(path, options);
  const { job, bundlePath } = await loadJobBundle(compiled.code, {
    ...options,
    sourceMap: compiled.sourceMap,
    label: `job module ${path}`,
  });
  return { ...compiled, job, sourcePath: resolve(path), bundlePath };
}

/**
 * Load a bundle made by compileJobModule (in this process or another): bind its SDK import to this
 * engine, store it under its SHA-256 and import it. `expectedSha256` guards against a corrupted ship.
 */
export async function loadJobBundle(
  code: Uint8Array,
  options: {
    cacheDir?: string;
    expectedSha256?: string;
    label?: string;
    sourceMap?: Uint8Array;
    sdkEntry?: string;
  } = {},
): Promise<{ job: JobDefinition; sha256: string; bundlePath: string }> {
  const sha256 = createHash('sha256').update(code).digest('hex');
  const label = options.label ?? `job module ${sha256.slice(0, 12)}`;
  if (options.expectedSha256 !== undefined && options.expectedSha256 !== sha256) {
    throw new JobLoadError(
      `${label}: its bytes hash to ${sha256}, not the ${options.expectedSha256} they were shipped as`,
    );
  }
  checkSdkCompatibility(bundleSdk(code), label);
  const cacheDir = options.cacheDir ?? defaultCacheDir();
  await makeDirectory(cacheDir);
  // The bound file names the engine it is bound to: a cache outliving one checkout of clink (or shared by
  // two) must never hand a bundle to an engine whose SDK lives elsewhere.
  const sdkUrl = pathToFileURL(options.sdkEntry ?? sdkEntryPath()).href;
  const bundleName = `${sha256}.${createHash('sha256').update(sdkUrl).digest('hex').slice(0, 16)}.mjs`;
  const bundlePath = join(cacheDir, bundleName);
  if (!existsSync(bundlePath)) {
    let bound = Buffer.from(code).toString('utf8').replaceAll(JSON.stringify(SDK_PLACEHOLDER), JSON.stringify(sdkUrl));
    if (options.sourceMap && options.sourceMap.length > 0) {
      await writeFile(`${bundlePath}.map`, options.sourceMap);
      bound += `//# sourceMappingURL=${bundleName}.map\n`;
    }
    const tmp = `${bundlePath}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(tmp, bound);
    await rename(tmp, bundlePath);
  }
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(bundlePath).href)) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof ClinkError) {
      throw new JobDefinitionError(`${label} failed while loading: ${err.message}`, { cause: err });
    }
    throw new JobLoadError(`${label} threw while loading: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
  if (!('default' in mod) || mod.default === undefined) {
    throw new JobDefinitionError(
      `${label} has no default export; end it with: export default defineJob({ name, version }, (env) => { ... })`,
    );
  }
  if (!isJobDefinition(mod.default)) {
    throw new JobDefinitionError(
      `the default export of ${label.replace(/^job module /, '')} is ${describe(mod.default)}, not a job; export the value returned by defineJob(...)`,
    );
  }
  return { job: mod.default, sha256, bundlePath };
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'function') return 'a function';
  if (typeof v === 'object') return 'an object';
  return `a ${typeof v}`;
}

/**
 * What a submit needs: the compiled module and the plan it declares. The plan is a pure function of
 * the module, the parallelism and the parameters (a build function must be deterministic, which every
 * worker checks), so it is cached under those and a repeated submit neither bundles nor imports.
 */
export async function prepareSubmission(
  path: string,
  o: {
    parallelism: number;
    params: Record<string, string>;
    cacheDir?: string;
    /** Check a freshly built spec (given a way to build it again) before it is cached; a throw refuses it. */
    verifyBuild?: (spec: JobGraphSpec, rebuild: () => JobGraphSpec) => void;
  },
): Promise<{ compiled: CompiledJob; spec: JobGraphSpec }> {
  const cacheDir = o.cacheDir ?? defaultCacheDir();
  const compiled = await compileJobModule(path, { cacheDir });
  const key = createHash('sha256')
    .update(JSON.stringify([compiled.sha256, o.parallelism, o.params]))
    .digest('hex')
    .slice(0, 32);
  const specPath = join(cacheDir, `spec-${key}.json`);
  const cached = await readFile(specPath, 'utf8')
    .then((t) => JSON.parse(t) as JobGraphSpec)
    .catch(() => undefined);
  if (cached) return { compiled, spec: cached };
  const { job } = await loadJobBundle(compiled.code, {
    cacheDir,
    sourceMap: compiled.sourceMap,
    label: `job module ${path}`,
  });
  const build = (): JobGraphSpec => buildJob(job, { parallelism: o.parallelism, params: o.params }).spec;
  const spec = build();
  o.verifyBuild?.(spec, build);
  await writeFile(specPath, JSON.stringify(spec));
  return { compiled, spec };
}
