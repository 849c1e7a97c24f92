// The Markdown parser of the WebUI (src/markdown.ts), in Node: what it
// keeps (snake_case, code, links) and what it refuses, and that hostile
// inputs finish. Run by `go test ./clients/webui` (TestMarkdownParser).
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { hostile, loadMarkdown } from "./load.mjs";

let md;
before(async () => {
  md = await loadMarkdown();
});

/** line parses one line into its inline runs. */
const line = (s) => md.parseInline(s);

test("snake_case and underscores inside words stay as written", () => {
  assert.deepEqual(line("session s_01M8XY, entry e_01M8ZZ"), ["session s_01M8XY, entry e_01M8ZZ"]);
  assert.deepEqual(line("call parse_header_line and my_var_"), ["call parse_header_line and my_var_"]);
  assert.deepEqual(line("__init__ and a__b__c"), [{ t: "strong", kids: ["init"] }, " and a__b__c"]);
  assert.deepEqual(line("_whole words_ are emphasis"), [{ t: "em", kids: ["whole words"] }, " are emphasis"]);
});

test("emphasis and strong", () => {
  assert.deepEqual(line("**bold** and *it*"), [{ t: "strong", kids: ["bold"] }, " and ", { t: "em", kids: ["it"] }]);
  assert.deepEqual(line("2 * 3 * 4"), ["2 * 3 * 4"]);
  assert.deepEqual(line("\\*not em\\*"), ["*not em*"]);
});

test("inline code keeps its text", () => {
  assert.deepEqual(line("run `go test ./x -run 'A_b*'` now"), ["run ", { t: "code", text: "go test ./x -run 'A_b*'" }, " now"]);
  assert.deepEqual(line("``a ` b``"), [{ t: "code", text: "a ` b" }]);
  assert.deepEqual(line("a ` alone"), ["a ` alone"]);
});

test("links: http(s) and mailto only; bare URLs link without trailing punctuation", () => {
  assert.deepEqual(line("[the docs](https://example.com/a_b_c) here"), [
    { t: "a", href: "https://example.com/a_b_c", kids: ["the docs"] },
    " here",
  ]);
  assert.deepEqual(line("[x](javascript:alert(1))"), ["[x](javascript:alert(1))"]);
  assert.deepEqual(line("see https://en.wikipedia.org/wiki/Foo_(bar)."), [
    "see ",
    { t: "a", href: "https://en.wikipedia.org/wiki/Foo_(bar)", kids: ["https://en.wikipedia.org/wiki/Foo_(bar)"] },
    ".",
  ]);
  assert.deepEqual(line("(https://example.com/x_y)"), ["(", { t: "a", href: "https://example.com/x_y", kids: ["https://example.com/x_y"] }, ")"]);
  assert.deepEqual(line("![a chart](https://example.com/c.png)"), [{ t: "img", alt: "a chart" }]);
});

test("blocks: fenced code keeps markup characters, headings, lists, quotes", () => {
  const blocks = md.parseMarkdown("# Title\n\n```go\nx := a_b * c_d // **no**\n```\n- one_two\n- `three`\n> quoted _em_\n\nplain\nnext");
  assert.deepEqual(blocks, [
    { t: "h", level: 2, kids: ["Title"] },
    { t: "pre", lang: "go", text: "x := a_b * c_d // **no**" },
    { t: "list", ordered: false, items: [["one_two"], [{ t: "code", text: "three" }]] },
    { t: "quote", blocks: [{ t: "p", lines: [["quoted ", { t: "em", kids: ["em"] }]] }] },
    { t: "p", lines: [["plain"], ["next"]] },
  ]);
});

test("hostile inputs of 80 KB parse, and keep their text", { timeout: 120_000 }, () => {
  for (const [name, unit] of Object.entries(hostile)) {
    const input = unit.repeat(Math.ceil(80_000 / unit.length));
    const blocks = md.parseMarkdown(input);
    assert.ok(blocks.length > 0, name);
  }
  // The case that froze tabs: nothing in it is markup, so it stays one text.
  const links = "[a](".repeat(20_000);
  assert.deepEqual(md.parseMarkdown(links), [{ t: "p", lines: [[links]] }]);
  // Quotes nest to a bound; deeper markers are text.
  const deep = md.parseMarkdown(">".repeat(100_000));
  let depth = 0;
  for (let b = deep[0]; b?.t === "quote"; b = b.blocks[0]) depth++;
  assert.equal(depth, 8);
});

test("the parser's work grows linearly: per byte, 100× a hostile input costs at most 1.5× what 1× does", () => {
  // work.reads counts the characters the parser reads (see markdown.ts):
  // deterministic, unlike time on a loaded machine (bench/markdown.mjs
  // times the same inputs).
  const perByte = (input) => {
    md.work.reads = 0;
    md.parseMarkdown(input);
    return md.work.reads / input.length;
  };
  const worse = [];
  for (const [name, unit] of Object.entries(hostile)) {
    const [one, ten, hundred] = [1_000, 10_000, 100_000].map((n) => perByte(unit.repeat(Math.ceil(n / unit.length))));
    if (ten > 1.5 * one || hundred > 1.5 * one) worse.push(`${name}: ${one.toFixed(2)}, ${ten.toFixed(2)}, ${hundred.toFixed(2)} reads per byte`);
    // A constant per byte, whatever the size (eight nested quotes read a line eight times).
    assert.ok(hundred < 100, `${name}: ${hundred} reads per byte`);
  }
  assert.deepEqual(worse, []);
  // The old link pattern's worst case, for scale: linear here too.
  assert.ok(perByte("[a](".repeat(20_000)) < 20);
});
