/**
 * The files a cached result was computed from, with the size and mtime each had: a bundle or a type
 * check is reused while every one of them is unchanged. Shared by the compile cache and the type check.
 */
import { rename, stat, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export type FileInputs = Record<string, { size: number; mtimeMs: number }>;

/** The size and mtime of each of `files` that exists. */
export async function statInputs(files: Iterable<string>): Promise<FileInputs> {
  const inputs: FileInputs = {};
  for (const f of files) {
    const st = await stat(f).catch(() => undefined);
    if (st) inputs[f] = { size: st.size, mtimeMs: st.mtimeMs };
  }
  return inputs;
}

/** Every file still has the size and mtime it was recorded with. */
export async function unchangedInputs(inputs: FileInputs): Promise<boolean> {
  for (const [file, want] of Object.entries(inputs)) {
    const st = await stat(file).catch(() => undefined);
    if (!st || st.size !== want.size || st.mtimeMs !== want.mtimeMs) return false;
  }
  return true;
}

/** Write a cache record whole or not at all (a temporary name, then rename). */
export async function writeRecord(path: string, record: unknown): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(record));
  await rename(tmp, path);
}

/** The package root of this clink (from src/ or dist/): where its package.json, dist/ and node_modules/ are. */
export function clinkPackageRoot(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '../..');
}
