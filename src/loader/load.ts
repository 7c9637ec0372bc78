import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { ClinkError, JobDefinitionError, JobLoadError } from '../errors.js';
import { isJobDefinition, type JobDefinition } from '../sdk/index.js';

export interface CompiledJob {
  /** The bundled ESM module. */
  code: Uint8Array;
  sha256: string;
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

/** Bundle a job file. The same sources give the same bytes, hence the same SHA-256. */
export async function compileJobModule(path: string): Promise<CompiledJob> {
  const sourcePath = resolve(path);
  let st;
  try {
    st = await stat(sourcePath);
  } catch {
    throw new JobLoadError(`job file not found: ${path} (resolved to ${sourcePath})`);
  }
  if (!st.isFile()) throw new JobLoadError(`job path is not a file: ${path}`);
  let result: esbuild.BuildResult & { outputFiles: esbuild.OutputFile[] };
  try {
    result = await esbuild.build({
      entryPoints: [sourcePath],
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      write: false,
      sourcemap: 'inline',
      // Stack frames of user code name the job file where it lives, not the cached bundle.
      sourceRoot: pathToFileURL(dirname(sourcePath)).href + '/',
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
    if (errors?.length) throw new JobLoadError(`job module ${path} does not compile:\n${formatBuildErrors(errors)}`, { cause: err });
    throw new JobLoadError(`job module ${path} does not compile: ${(err as Error).message}`, { cause: err });
  }
  const code = result.outputFiles[0]!.contents;
  return { code, sha256: createHash('sha256').update(code).digest('hex') };
}

/** Compile, cache by content hash, import, and check the default export is a job. */
export async function loadJobModule(path: string, options: { cacheDir?: string } = {}): Promise<LoadedJob> {
  const compiled = await compileJobModule(path);
  const { job, bundlePath } = await loadJobBundle(compiled.code, { ...options, label: `job module ${path}` });
  return { ...compiled, job, sourcePath: resolve(path), bundlePath };
}

/**
 * Load a bundle made by compileJobModule (in this process or another): bind its SDK import to this
 * engine, store it under its SHA-256 and import it. `expectedSha256` guards against a corrupted ship.
 */
export async function loadJobBundle(
  code: Uint8Array,
  options: { cacheDir?: string; expectedSha256?: string; label?: string } = {},
): Promise<{ job: JobDefinition; sha256: string; bundlePath: string }> {
  const sha256 = createHash('sha256').update(code).digest('hex');
  const label = options.label ?? `job module ${sha256.slice(0, 12)}`;
  if (options.expectedSha256 !== undefined && options.expectedSha256 !== sha256) {
    throw new JobLoadError(`${label}: its bytes hash to ${sha256}, not the ${options.expectedSha256} they were shipped as`);
  }
  const cacheDir = options.cacheDir ?? defaultCacheDir();
  await mkdir(cacheDir, { recursive: true });
  const bundlePath = join(cacheDir, `${sha256}.mjs`);
  if (!existsSync(bundlePath)) {
    const sdk = JSON.stringify(pathToFileURL(sdkEntryPath()).href);
    const bound = Buffer.from(code).toString('utf8').replaceAll(JSON.stringify(SDK_PLACEHOLDER), sdk);
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
