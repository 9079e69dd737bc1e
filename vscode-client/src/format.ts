// Numbers and times as the views show them.

/** 950 → "950", 12_345 → "12.3k", 128_000 → "128k", 1_500_000 → "1.5M". */
export function tokens(n: number): string {
  const abs = Math.abs(n);
  if (abs < 1000) return String(Math.round(n));
  const [value, unit] = abs < 1_000_000 ? [n / 1000, "k"] : [n / 1_000_000, "M"];
  const digits = Math.abs(value) < 100 ? 1 : 0;
  return `${Number(value.toFixed(digits))}${unit}`;
}

const UNITS: [number, string][] = [
  [60, "second"],
  [60, "minute"],
  [24, "hour"],
  [7, "day"],
  [4.35, "week"],
  [12, "month"],
  [Number.POSITIVE_INFINITY, "year"],
];

/** "just now", "5 minutes ago", "2 days ago" (`iso` before `now`). */
export function relativeTime(iso: string, now: Date): string {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return iso;
  let amount = Math.max(0, (now.getTime() - then) / 1000);
  if (amount < 10) return "just now";
  for (const [size, unit] of UNITS) {
    if (amount < size) {
      const whole = Math.floor(amount);
      return `${whole} ${unit}${whole === 1 ? "" : "s"} ago`;
    }
    amount /= size;
  }
  return iso;
}

/** "a.txt, b.py and 3 more" */
export function fileList(files: string[], shown = 3): string {
  if (files.length <= shown) return files.join(", ");
  return `${files.slice(0, shown).join(", ")} and ${files.length - shown} more`;
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** Who wrote a compaction's summary, as the views say it ("summary by the provider (openai)"). */
export function summaryBy(item: { summarizer?: string; provider?: string }): string {
  if (item.summarizer === "structured") return "summary by code";
  if (item.summarizer === "provider") return `summary by the provider${item.provider ? ` (${item.provider})` : ""}`;
  return "summary by the model";
}
