import { rename, writeFile } from 'node:fs/promises';

/** Write a file atomically (a temporary name, then rename), so a reader never sees half of it. */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, path);
}
