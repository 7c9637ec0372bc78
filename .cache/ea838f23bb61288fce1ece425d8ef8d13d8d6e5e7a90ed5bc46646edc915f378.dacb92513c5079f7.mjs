// clink-sdk fingerprint=cda8f32b88964078520e69f03b7539921fec156c82c6b7dec5ce4089accd660b version=0.1.0

// wordcount.ts
import { defineJob } from "file:///work/main/src/index.ts";
var TEXT = [
  "To be, or not to be, that is the question:",
  "Whether tis nobler in the mind to suffer",
  "The slings and arrows of outrageous fortune,",
  "Or to take arms against a sea of troubles",
  "And by opposing end them."
];
var wordcount_default = defineJob({ name: "wordcount", version: "1", description: "count words in text" }, (env) => {
  const lines = env.params.input ? env.fromSource("file", { path: env.params.input, format: "lines" }) : env.fromElements(TEXT);
  lines.flatMap((line, out) => {
    for (const word of line.toLowerCase().split(/[^a-z0-9']+/)) if (word) out.collect(word);
  }).name("tokenize").keyBy((word) => word).process({
    processElement(_word, ctx) {
      const count = ctx.state.value("count");
      count.update((count.value() ?? 0) + 1);
      ctx.timers.registerEventTime(Number.MAX_SAFE_INTEGER);
    },
    onTimer(_ts, ctx, out) {
      out.collect({ word: ctx.key, count: ctx.state.value("count").value() ?? 0 });
    }
  }).name("count").collect("word counts");
});
export {
  wordcount_default as default
};
//# sourceMappingURL=ea838f23bb61288fce1ece425d8ef8d13d8d6e5e7a90ed5bc46646edc915f378.dacb92513c5079f7.mjs.map
