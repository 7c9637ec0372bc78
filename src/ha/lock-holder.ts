/**
 * The leader lock is held by a small helper process, not by the coordinator itself. The helper asks for
 * the lock every `pollMs` until it has it, says so, and holds it until its stdin closes: when the
 * coordinator exits, however it exits, the pipe closes and the helper lets go. It is also what a probe
 * uses to ask for a lock from a second process (POSIX locks cannot be tested within one), and what an
 * operator (or a test) can kill to take leadership from a coordinator that is paused.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { FS_EXT_PATH } from './file-lock.js';

// CommonJS, run with `node -e`: argv is [node, lockPath, fsExtPath, pollMs, mode].
const HOLDER_SOURCE = `
const [lockPath, fsExt, pollMs, mode] = process.argv.slice(1);
const fs = require('fs');
const { flockSync } = require(fsExt);
const fd = fs.openSync(lockPath, 'a');
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
const attempt = () => {
  try {
    flockSync(fd, 'exnb');
  } catch (e) {
    if (e.code !== 'EAGAIN' && e.code !== 'EWOULDBLOCK') {
      process.stdout.write('error ' + e.message + '\\n');
      process.exit(3);
    }
    if (mode === 'once') {
      process.stdout.write('busy\\n');
      process.exit(0);
    }
    setTimeout(attempt, Number(pollMs));
    return;
  }
  process.stdout.write('locked\\n');
  if (mode === 'once') process.exit(0);
};
attempt();
`;

export type HolderEnd = { reason: 'exited'; detail: string };

export class LockHolder {
  /** Resolves once the helper holds the lock. */
  readonly acquired: Promise<void>;
  /** Resolves when the helper has gone (the lock is no longer held by it). */
  readonly ended: Promise<HolderEnd>;
  private readonly child: ChildProcess;
  private held = false;

  private constructor(lockPath: string, pollMs: number) {
    this.child = spawn(process.execPath, ['-e', HOLDER_SOURCE, lockPath, FS_EXT_PATH, String(pollMs), 'hold'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.child.stdin!.on('error', () => undefined);
    let onLocked!: () => void;
    let onFailed!: (err: Error) => void;
    this.acquired = new Promise<void>((resolve, reject) => {
      onLocked = resolve;
      onFailed = reject;
    });
    this.acquired.catch(() => undefined);
    const lines = createInterface({ input: this.child.stdout! });
    let error = '';
    lines.on('line', (line) => {
      if (line === 'locked') {
        this.held = true;
        onLocked();
      } else if (line.startsWith('error ')) error = line.slice(6);
    });
    this.ended = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        const detail =
          error ||
          (signal
            ? `the lock holder process ${this.child.pid} was killed (${signal})`
            : `the lock holder process ${this.child.pid} exited (${code})`);
        onFailed(new Error(`cannot hold ${lockPath}: ${detail}`));
        resolve({ reason: 'exited', detail });
      });
    });
  }

  /** Start a helper that takes the lock on `lockPath` as soon as it is free, asking every `pollMs`. */
  static spawn(lockPath: string, pollMs: number): LockHolder {
    return new LockHolder(lockPath, pollMs);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get holding(): boolean {
    return this.held && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Let go of the lock (the helper exits). */
  async release(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.stdin!.end();
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 2_000);
      await this.ended;
      clearTimeout(timer);
    }
  }
}

/** Ask once, from another process, for the lock on `lockPath`: true when it was granted. */
export function lockGrantedToAnotherProcess(lockPath: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', HOLDER_SOURCE, lockPath, FS_EXT_PATH, '0', 'once'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    child.stdin.end();
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.once('error', reject);
    child.once('exit', () => {
      if (out.startsWith('locked')) resolve(true);
      else if (out.startsWith('busy')) resolve(false);
      else reject(new Error(`the lock probe could not run: ${out.trim() || 'no answer'}`));
    });
  });
}
