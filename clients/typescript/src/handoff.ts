// The five-part handoff parser, the same rules as Bridge's own (Go,
// core/handoff): "## " sections, the five parts once each and in order, each
// non-empty, headings in English or Chinese and not mixed; sections after
// the fifth are kept. No runtime dependencies: the WebUI bundles it as is.

/** The five parts, in the order a handoff gives them. */
export const handoffParts = ["goal", "currentState", "keyDecisions", "keyFiles", "nextStep"] as const;
/** One of the five parts. */
export type HandoffPart = (typeof handoffParts)[number];

/** The headings of the five parts per language. */
export const handoffHeadings: Readonly<Record<"en" | "zh", readonly string[]>> = {
  en: ["Goal", "Current state", "Key decisions & conventions", "Key files", "Next step"],
  zh: ["目标", "当前状态", "关键决策与约定", "关键文件", "下一步"],
};

const aliases: Record<string, number> = {
  "key decisions and conventions": 2,
  "key decisions": 2,
  "decisions & conventions": 2,
  "next steps": 4,
  "关键决策": 2,
};

import type { HandoffSection } from "./contract.js";
export type { HandoffSection };

/** A parsed handoff; problems is empty when it is valid. */
export interface ParsedHandoff {
  lang: "en" | "zh" | "";
  /** The five parts by name; a missing part is absent. */
  sections: Partial<Record<HandoffPart, HandoffSection>>;
  /** Sections after the fifth (visual evidence, …), verbatim. */
  extra: HandoffSection[];
  /** Text before the first heading. */
  preamble: string;
  /** What is wrong, one sentence each (the server's wording). */
  problems: string[];
}

/** partOf maps a heading to its part's index, or -1. */
export function partOf(title: string): number {
  const t = title.replace(/[:：]+$/u, "").trim().toLowerCase();
  for (const hs of Object.values(handoffHeadings)) {
    const i = hs.findIndex((h) => h.toLowerCase() === t);
    if (i >= 0) return i;
  }
  return aliases[t] ?? -1;
}

/** splitSections splits Markdown into its level-2 sections (outside code fences). */
export function splitSections(md: string): { preamble: string; sections: HandoffSection[] } {
  const lines = md.replace(/\r\n/g, "\n").split("\n");
  const sections: HandoffSection[] = [];
  const pre: string[] = [];
  let cur: HandoffSection | undefined;
  let body: string[] = [];
  let inFence = false;
  const flush = () => {
    if (cur) {
      cur.body = body.join("\n").trim();
      sections.push(cur);
      body = [];
    }
  };
  for (const line of lines) {
    if (line.trim().startsWith("```")) inFence = !inFence;
    if (!inFence && line.startsWith("## ")) {
      flush();
      cur = { title: line.slice(3).trim(), body: "" };
      continue;
    }
    (cur ? body : pre).push(line);
  }
  flush();
  return { preamble: pre.join("\n").trim(), sections };
}

const en = handoffHeadings.en;
const isCJK = (s: string) => /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(s);

/** parseHandoff reads a five-part handoff and lists what is wrong with it. */
export function parseHandoff(md: string): ParsedHandoff {
  const { preamble, sections } = splitSections(md);
  const out: ParsedHandoff = { lang: "", sections: {}, extra: [], preamble, problems: [] };
  let next = 0;
  for (const s of sections) {
    const p = partOf(s.title);
    if (p < 0 || next === 5) {
      if (next === 5) {
        out.extra.push(s);
        continue;
      }
      out.problems.push(`unexpected section "${s.title}" before "${en[next]}"`);
      continue;
    }
    if (p !== next) {
      out.problems.push(
        p < next
          ? `section "${s.title}" appears twice or out of order`
          : `section "${en[next]}" is missing before "${s.title}"`,
      );
      next = p;
    }
    if (s.body === "") out.problems.push(`section "${s.title}" is empty`);
    const lang = isCJK(s.title) ? "zh" : "en";
    if (out.lang === "") out.lang = lang;
    else if (lang !== out.lang) out.problems.push(`section "${s.title}" mixes languages`);
    out.sections[handoffParts[p]] = s;
    next = p + 1;
  }
  for (let p = next; p < 5; p++) out.problems.push(`section "${en[p]}" is missing`);
  return out;
}

/** The headings of the sections outside the summary budget (they have their own). */
export const budgetFreeHeadings: readonly string[] = [
  "Visual evidence — verbatim, not summarized",
  "视觉证据（原文，未经摘要）",
  "Unresolved images",
  "未解析的图片",
];

/**
 * summaryChars counts a handoff as its summary budget does (the server's
 * rule, the preview's summaryChars): Unicode code points of the text with
 * surrounding white space trimmed, leaving out the visual evidence and
 * unresolved images sections, each from its "## " heading to the next one.
 */
export function summaryChars(md: string): number {
  const kept: string[] = [];
  let skip = false;
  let inFence = false;
  for (const line of md.replace(/\r\n/g, "\n").split("\n")) {
    if (line.trim().startsWith("```")) inFence = !inFence;
    if (!inFence && line.startsWith("## ")) skip = budgetFreeHeadings.includes(line.slice(3).trim());
    if (!skip) kept.push(line);
  }
  return [...kept.join("\n").trim()].length;
}
