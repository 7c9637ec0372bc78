// clink-sdk fingerprint=00617cd9efc69c024a52ecb4738f2363e9f8841512193c61e88107b5f210c1f6 version=0.1.0

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
//# sourceMappingURL=6dfeed88e03ee1c74a40703c45e10289a496d3491142a02dc738368061d9a8da.dacb92513c5079f7.mjs.map
