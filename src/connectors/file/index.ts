/**
 * file: a source of text lines or JSON lines (a file, or every visible file in a directory, files
 * assigned round-robin to subtasks), and a sink that writes `part-<subtask>-<n>.jsonl` files into a
 * directory. A part file is written under a hidden in-progress name and renamed when finished, so a
 * reader never sees a partial file.
 */
import { open, readdir, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { ConnectorError } from '../../errors.js';
import type { Connector, SourceOutput } from '../../sdk/index.js';
import { parseOptions } from '../options.js';
import { makeDirectory } from '../../util/index.js';

const SourceOptions = z
  .object({
    path: z.string().min(1),
    /** @default 'jsonl' for .jsonl/.ndjson files, else 'lines' */
    format: z.enum(['lines', 'jsonl']).optional(),
  })
  .strict();

export const DEFAULT_ROLL_BYTES = 128 * 1024 * 1024;
const SinkOptions = z
  .object({
    path: z.string().min(1),
    /** Start a new part file at the first batch boundary after this many bytes. @default 128 MiB */
    rollBytes: z.number().int().positive().default(DEFAULT_ROLL_BYTES),
    /** jsonl: each record as a JSON line; lines: each record (a string) as the line itself. @default 'jsonl' */
    format: z.enum(['jsonl', 'lines']).default('jsonl'),
  })
  .strict();

const READ_CHUNK_BYTES = 64 * 1024;

async function listInputFiles(path: string): Promise<string[]> {
  let st;
  try {
    st = await stat(path);
  } catch (err) {
    throw new ConnectorError(`file source: cannot read '${path}': ${(err as Error).message}; check the path option`, {
      cause: err,
    });
  }
  if (st.isFile()) return [path];
  const names = (await readdir(path, { withFileTypes: true }))
    .filter((d) => d.isFile() && !d.name.startsWith('.'))
    .map((d) => d.name)
    .sort();
  return names.map((n) => join(path, n));
}

/** Reads one file in 64 KiB chunks and yields lines without holding the whole file. */
class LineReader {
  private fh: FileHandle | null = null;
  private rest = '';
  private lines: string[] = [];
  private li = 0;
  private eof = false;
  lineNo = 0;
  private readonly buf = Buffer.allocUnsafe(READ_CHUNK_BYTES);
  private readonly decoder = new TextDecoder();

  constructor(readonly path: string) {}

  /** The next line, or undefined at end of file. */
  async next(): Promise<string | undefined> {
    for (;;) {
      if (this.li < this.lines.length) {
        this.lineNo++;
        return this.lines[this.li++];
      }
      if (this.eof) return undefined;
      await this.fill();
    }
  }

  nextSync(): string | undefined {
    if (this.li < this.lines.length) {
      this.lineNo++;
      return this.lines[this.li++];
    }
    return undefined;
  }

  private async fill(): Promise<void> {
    this.fh ??= await open(this.path, 'r');
    const { bytesRead } = await this.fh.read(this.buf, 0, READ_CHUNK_BYTES, null);
    let text = this.rest + this.decoder.decode(this.buf.subarray(0, bytesRead), { stream: bytesRead > 0 });
    if (bytesRead === 0) {
      this.eof = true;
      await this.close();
      if (text.length > 0) text += '\n';
    }
    const parts = text.split('\n');
    this.rest = parts.pop() ?? '';
    this.lines = parts.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
    this.li = 0;
  }

  async close(): Promise<void> {
    const fh = this.fh;
    this.fh = null;
    await fh?.close();
  }
}

/** How the sink's part files of subtask `i` start (hidden ones with a dot before it). */
const partPrefix = (i: number): string => `part-${i}-`;

/** [path, lines to skip] of each file a subtask has left to read. */
type FilesLeft = [string, number][];

/**
 * What a source subtask has left, from its position: `{ files }`, or `{ fi, line }` (an index into its
 * share of the listing, the form before rescaling existed), or none (its whole share: file i of the
 * sorted listing goes to subtask i mod p).
 */
function filesOf(position: unknown, all: readonly string[], index: number, parallelism: number): FilesLeft {
  const p = position as { files?: FilesLeft; fi?: number; line?: number } | undefined;
  if (p?.files) return p.files.map(([f, l]) => [f, l]);
  const mine: FilesLeft = all.filter((_, i) => i % parallelism === index).map((f) => [f, 0]);
  if (p?.fi === undefined) return mine;
  const left = mine.slice(p.fi);
  if (left[0]) left[0][1] = p.line ?? 0;
  return left;
}

export const file: Connector<unknown, unknown> = {
  name: 'file',
  source: {
    validate: (o) => parseOptions('file source', SourceOptions, o),
    async createReader(o: z.infer<typeof SourceOptions>, ctx) {
      /** The files this subtask reads, with the lines of each to skip (read before a restored checkpoint). */
      let files = filesOf(undefined, await listInputFiles(o.path), ctx.subtaskIndex, ctx.parallelism);
      let fi = 0;
      let reader: LineReader | null = null;
      /** Lines of file `fi` to skip after a restore (they were read before the checkpoint). */
      let skip = 0;
      const parse = (line: string, r: LineReader): unknown => {
        const fmt = o.format ?? (/\.(jsonl|ndjson)$/i.test(r.path) ? 'jsonl' : 'lines');
        if (fmt === 'lines') return line;
        try {
          return JSON.parse(line) as unknown;
        } catch (err) {
          throw new ConnectorError(`file source: ${r.path}:${r.lineNo}: not valid JSON (${(err as Error).message})`, {
            cause: err,
          });
        }
      };
      return {
        async read(out: SourceOutput<unknown>, max: number) {
          let n = 0;
          while (n < max) {
            if (!reader) {
              if (fi >= files.length) return 'END';
              reader = new LineReader(files[fi]![0]);
              skip = files[fi]![1];
            }
            const line = reader.nextSync() ?? (await reader.next());
            if (line === undefined) {
              reader = null;
              fi++;
              continue;
            }
            if (skip > 0) {
              skip--;
              continue;
            }
            if (line.length === 0) continue;
            out.collect(parse(line, reader));
            n++;
          }
          return 'MORE';
        },
        async close() {
          await reader?.close();
        },
        // The files left and the lines of the current one read: a rescale deals them out again.
        snapshot: () => ({
          files: files.slice(fi).map(([path, lines], k) => [path, k === 0 && reader ? reader.lineNo : lines]),
        }),
        async restore(position) {
          files = filesOf(position, await listInputFiles(o.path), ctx.subtaskIndex, ctx.parallelism);
          fi = 0;
        },
      };
    },
    async rescale(positions, parallelism, o: z.infer<typeof SourceOptions>) {
      const all = await listInputFiles(o.path);
      const left = positions.flatMap((p, i) => filesOf(p, all, i, positions.length));
      return Array.from({ length: parallelism }, (_, s) => ({ files: left.filter((_, k) => k % parallelism === s) }));
    },
  },
  sink: {
    validate: (o) => parseOptions('file sink', SinkOptions, o),
    rescalable: true,
    async createWriter(o: z.infer<typeof SinkOptions>, ctx) {
      try {
        await makeDirectory(o.path);
      } catch (err) {
        throw new ConnectorError(`file sink: cannot create directory '${o.path}': ${(err as Error).message}`, {
          cause: err,
        });
      }
      const prefix = partPrefix(ctx.subtaskIndex);
      // Continue numbering after part files an earlier run left, never overwriting them.
      let seq = 0;
      for (const name of await readdir(o.path)) {
        const m = new RegExp(`^\\.?${prefix}(\\d+)\\.jsonl`).exec(name);
        if (m) seq = Math.max(seq, Number(m[1]) + 1);
      }
      let fh: FileHandle | null = null;
      let current = '';
      let written = 0;
      let pending: string[] = [];
      let pendingBytes = 0;
      const finalName = (n: number): string => join(o.path, `${prefix}${n}.jsonl`);
      const hiddenName = (n: number): string => join(o.path, `.${prefix}${n}.jsonl.inprogress`);
      const preparedName = (n: number): string => join(o.path, `.${prefix}${n}.jsonl.pending`);
      /** Close the part being written and move it to `to` (its final name, or a pending one). */
      const closePartAs = async (to: (n: number) => string): Promise<number | undefined> => {
        if (!fh) return undefined;
        await fh.sync();
        await fh.close();
        fh = null;
        const n = seq;
        await rename(current, to(n));
        seq++;
        written = 0;
        return n;
      };
      const closePart = (): Promise<number | undefined> => closePartAs(finalName);
      const flush = async (): Promise<void> => {
        if (pending.length === 0) return;
        const text = pending.join('');
        pending = [];
        pendingBytes = 0;
        if (!fh) {
          current = hiddenName(seq);
          fh = await open(current, 'wx');
        }
        await fh.write(text);
        written += Buffer.byteLength(text);
        if (written >= o.rollBytes) await closePart();
      };
      return {
        write(v) {
          const line = (o.format === 'lines' && typeof v === 'string' ? v : (JSON.stringify(v) ?? 'null')) + '\n';
          pending.push(line);
          pendingBytes += line.length;
        },
        flush() {
          return pendingBytes > 0 ? flush() : undefined;
        },
        async finish() {
          await flush();
          await closePart();
        },
        async close() {
          // An unfinished part is never published: a failed job removes it (no checkpoint holds it; a
          // parked .pending part is a checkpoint's committable and stays for the restore to commit).
          if (!fh) return;
          await fh.close().catch(() => undefined);
          fh = null;
          await rm(current, { force: true });
        },
        // Exactly-once: at a barrier, the part being written is synced and parked under a hidden
        // pending name; it becomes visible only when its checkpoint completes.
        async preCommit() {
          await flush();
          const n = await closePartAs(preparedName);
          return { parts: n === undefined ? [] : [n] };
        },
        async commit(committable) {
          for (const n of (committable as { parts: number[] }).parts) {
            try {
              await rename(preparedName(n), finalName(n));
            } catch (err) {
              // Committed already (a commit is retried after a restore): the final part exists.
              if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
              await stat(finalName(n));
            }
          }
        },
        async recover(_committed, scope) {
          // Parts still hidden of this subtask, and of the earlier ones it takes over after a rescale,
          // were written after the restored checkpoint: drop them. (No other running subtask writes
          // under those prefixes: one taken over by s has an index i = s mod p', past the new parallelism.)
          const prefixes = [...new Set([ctx.subtaskIndex, ...scope.subtasks])].map((i) => `.${partPrefix(i)}`);
          for (const name of await readdir(o.path)) {
            if (prefixes.some((p) => name.startsWith(p)) && (name.endsWith('.inprogress') || name.endsWith('.pending')))
              await rm(join(o.path, name), { force: true });
          }
        },
      };
    },
  },
};
