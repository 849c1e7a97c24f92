// markdown.mjs times the WebUI's Markdown parser (src/markdown.ts) over
// hostile inputs at 1×, 10× and 100× a base size, and prints, per input,
// the time per byte at each size and the ratio of the largest to the
// smallest (linear: about 1; the goal is ≤ 1.5). The sizes take turns
// within each round and each keeps its fastest round, so that load from
// other programs, which only ever adds time, weighs on every size alike.
// Run by BenchmarkMarkdown (clients/webui/bench_test.go). Prints one JSON
// object: {"base": bytes, "cases": [{"name", "nsPerByte": [1×, 10×, 100×], "ratio"}]}.
//
// Usage: node --expose-gc clients/webui/bench/markdown.mjs [BASE_BYTES [ROUNDS]]
import { hostile, loadMarkdown } from "../unit/load.mjs";

const base = Number(process.argv[2] ?? 1000);
const rounds = Number(process.argv[3] ?? 30);
const md = await loadMarkdown();
const gc = globalThis.gc ?? (() => {});

const cases = [];
for (const [name, unit] of Object.entries(hostile)) {
  const inputs = [1, 10, 100].map((k) => unit.repeat(Math.ceil((base * k) / unit.length)));
  const best = [Infinity, Infinity, Infinity];
  for (let r = 0; r < rounds; r++) {
    inputs.forEach((input, k) => {
      const reps = [100, 10, 1][k]; // about the same bytes per sample
      gc();
      const t0 = process.hrtime.bigint();
      for (let j = 0; j < reps; j++) md.parseMarkdown(input);
      const ns = Number(process.hrtime.bigint() - t0) / reps;
      best[k] = Math.min(best[k], ns / input.length);
    });
  }
  const round = (x) => Math.round(x * 100) / 100;
  cases.push({ name, nsPerByte: best.map(round), ratio: round(best[2] / best[0]) });
}
console.log(JSON.stringify({ base, cases }));
