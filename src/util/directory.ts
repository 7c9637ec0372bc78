/**
 * Create a directory and its missing parents. Node 20's `mkdir(path, { recursive: true })` never settles
 * for a path under a filesystem that refuses the new entry with ENOENT (procfs, sysfs: `--ha-dir
 * /proc/x` hung a node for good), so the parents are made one at a time and each refusal surfaces.
 */
import { mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';

export async function makeDirectory(path: string): Promise<void> {
  const made = await tryMkdir(path);
  if (made !== 'ENOENT') return;
  const parent = dirname(path);
  if (parent === path) throw new Error(`cannot create ${path}: its root does not exist`);
  await makeDirectory(parent);
  if ((await tryMkdir(path)) === 'ENOENT') await mkdir(path); // throws the refusal itself
}

/** mkdir one level: 'ok' when made or already a directory, 'ENOENT' when a parent is missing; throws otherwise. */
async function tryMkdir(path: string): Promise<'ok' | 'ENOENT'> {
  try {
    await mkdir(path);
    return 'ok';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'ENOENT';
    if (code === 'EEXIST' && (await stat(path)).isDirectory()) return 'ok';
    throw err;
  }
}
