/** print: one line per record on standard output, prefixed `<subtask>> ` when the sink is parallel. */
import { inspect } from 'node:util';
import { z } from 'zod';
import type { Connector } from '../../sdk/index.js';
import { parseOptions } from '../options.js';

const Options = z.object({ prefix: z.string().optional() }).strict();

export function formatRecord(v: unknown): string {
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return inspect(v, { depth: 4, breakLength: Infinity });
  }
}

/**
 * A write of at most PIPE_BUF bytes to a pipe is atomic, so chunks of whole lines that size never have
 * another writer's line (a log record, when standard error shares the pipe) land inside one of theirs.
 */
const ATOMIC_WRITE_BYTES = 4096;

export function wholeLineChunks(lines: readonly string[]): string[] {
  const chunks: string[] = [];
  let current = '';
  let bytes = 0;
  for (const l of lines) {
    const line = l + '\n';
    const n = Buffer.byteLength(line);
    if (bytes > 0 && bytes + n > ATOMIC_WRITE_BYTES) {
      chunks.push(current);
      current = '';
      bytes = 0;
    }
    current += line;
    bytes += n;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

export function printConnector(stdout: (text: string) => void | Promise<void>): Connector<never, unknown> {
  return {
    name: 'print',
    sink: {
      validate: (o) => parseOptions('print', Options, o),
      rescalable: true,
      createWriter(o: z.infer<typeof Options>, ctx) {
        const prefix = (o.prefix ?? '') + (ctx.parallelism > 1 ? `${ctx.subtaskIndex + 1}> ` : '');
        let lines: string[] = [];
        return {
          write(v) {
            lines.push(prefix + formatRecord(v));
          },
          flush() {
            if (lines.length === 0) return;
            const chunks = wholeLineChunks(lines);
            lines = [];
            if (chunks.length === 1) return stdout(chunks[0]!);
            return chunks.reduce<Promise<void>>((p, c) => p.then(() => stdout(c)), Promise.resolve());
          },
        };
      },
    },
  };
}
