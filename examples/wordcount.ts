/**
 * Word count: split lines into words and count each word. Reads `--param input=<file or dir>` when
 * given, else a built-in text. Emits one final count per word when the input ends.
 *
 *   clink run examples/wordcount.ts --param input=README.md
 */
import { defineJob } from 'clink';

const TEXT = [
  'To be, or not to be, that is the question:',
  'Whether tis nobler in the mind to suffer',
  'The slings and arrows of outrageous fortune,',
  'Or to take arms against a sea of troubles',
  'And by opposing end them.',
];

export default defineJob({ name: 'wordcount', version: '1', description: 'count words in text' }, (env) => {
  const lines = env.params.input
    ? env.fromSource<string>('file', { path: env.params.input, format: 'lines' }).uid('lines')
    : env.fromElements(TEXT);
  lines
    .flatMap<string>((line, out) => {
      for (const word of line.toLowerCase().split(/[^a-z0-9']+/)) if (word) out.collect(word);
    })
    .name('tokenize')
    .keyBy((word) => word)
    .process<{ word: string; count: number }>({
      processElement(_word, ctx) {
        const count = ctx.state.value<number>('count');
        count.update((count.value() ?? 0) + 1);
        // Fires when the input ends (the final watermark passes every timestamp).
        ctx.timers.registerEventTime(Number.MAX_SAFE_INTEGER);
      },
      onTimer(_ts, ctx, out) {
        out.collect({ word: ctx.key, count: ctx.state.value<number>('count').value() ?? 0 });
      },
    })
    .name('count')
    .uid('count')
    .collect('word counts');
});
