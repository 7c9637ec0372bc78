/** Run the clink CLI as a real process (through tsx), with its own job cache. */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before } from 'node:test';
import { PATIENCE_MS } from '../helpers.js';

export const ROOT = resolve(import.meta.dirname, '../..');
export const TSX = join(ROOT, 'node_modules/tsx/dist/esm/index.mjs');
export const BIN = join(ROOT, 'src/cli/bin.ts');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `input`, when given, is the process's standard input (else it is left open and empty). */
export function runCli(
  args: string[],
  cwd: string,
  timeoutMs = PATIENCE_MS,
  env: Record<string, string | undefined> = {},
  input?: string,
): Promise<CliRun> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, ['--import', TSX, BIN, ...args], {
      cwd,
      env: { ...process.env, CLINK_CACHE_DIR: join(cwd, '.cache'), ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', rej);
    child.on('close', (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr });
    });
    if (input !== undefined) child.stdin.end(input);
  });
}

/**
 * Run the CLI on a pseudo-terminal, as a person would see it (script(1) from util-linux): standard
 * output and error arrive together in `stdout`, with the terminal's \r\n line ends.
 */
export function runCliOnTerminal(
  args: string[],
  cwd: string,
  timeoutMs = PATIENCE_MS,
  input?: { text: string; env?: Record<string, string> },
): Promise<CliRun> {
  const quoted = args.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  return new Promise((res, rej) => {
    // With input: typed at the terminal (script passes its standard input on), then end of input (Ctrl-D).
    const child = spawn('script', ['-qec', `"${process.execPath}" --import "${TSX}" "${BIN}" ${quoted}`, '/dev/null'], {
      cwd,
      env: { ...process.env, CLINK_CACHE_DIR: join(cwd, '.cache'), ...input?.env },
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', rej);
    child.on('close', (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr: '' });
    });
    if (input) child.stdin.end(input.text);
  });
}

/** The frames a redrawn progress line went through (each starts `[clink] <name>`). */
export function progressFrames(terminalOutput: string, name: string): string[] {
  return terminalOutput.split('\r\x1b[2K').filter((f) => f.startsWith(`[clink] ${name}`));
}

/**
 * A directory (named from `prefix`) holding `files` for the tests of the calling file: made before
 * them, removed after them. Returns its path's getter (the path is known once the hook has run).
 */
export function useJobDir(prefix: string, files: Record<string, string>): () => string {
  let dir: string | undefined;
  before(async () => {
    dir = await makeJobDir(prefix, files);
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  return () => {
    if (!dir) throw new Error('the job directory is made in a before hook: read it inside a test');
    return dir;
  };
}

/** A new temporary directory (named from `prefix`) holding `files`: name to text. */
export async function makeJobDir(prefix: string, files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}
