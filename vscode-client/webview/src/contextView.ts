/**
 * The context view: the meter (tokens / window, percent, stable-prefix share) and a small
 * chart of context tokens per turn, compactions marked. A hand-made SVG: a few dozen lines
 * instead of a charting library, and no inline styles (colours come from CSS classes that
 * read VS Code's theme variables).
 */
import { button, el } from "./dom";
import type { ContextState } from "./model";
import { formatTokens } from "./rows";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 300;
const HEIGHT = 80;
const MAX_POINTS = 200; // the newest turns; older ones would be sub-pixel anyway

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  return element;
}

export function meterText(context: ContextState | undefined): string {
  if (context === undefined) return "–";
  return `${formatTokens(context.tokens)} / ${formatTokens(context.contextWindow)} · ${Math.round(context.percent)}%`;
}

export function meterLevel(context: ContextState | undefined): "ok" | "warn" | "high" {
  const percent = context?.percent ?? 0;
  return percent >= 85 ? "high" : percent >= 70 ? "warn" : "ok";
}

export interface Point {
  tokens: number;
  stable: number;
  compaction: boolean;
}

export function renderContextView(
  container: HTMLElement,
  context: ContextState | undefined,
  allPoints: Point[],
): void {
  const points = allPoints.slice(-MAX_POINTS);
  const share = context && context.tokens > 0 ? Math.round((100 * context.stablePrefixTokens) / context.tokens) : undefined;
  const percent = Math.min(100, Math.max(0, context?.percent ?? 0));
  const bar = el("div", {
    class: `meter meter-${meterLevel(context)}`,
    role: "meter",
    "aria-valuemin": 0,
    "aria-valuemax": 100,
    "aria-valuenow": Math.round(percent),
    "aria-label": "Context used",
  });
  const fill = el("div", { class: "meter-fill" });
  fill.style.width = `${percent}%`;
  bar.append(fill);
  const compactions = points.filter((p) => p.compaction).length;
  container.replaceChildren(
    el("div", { class: "context-head" },
      el("span", { class: "context-figure" }, meterText(context)),
      el("span", { class: "context-share" }, share === undefined ? "" : `stable prefix ${share}%`),
      el("span", { class: "context-window" }, context?.windowOrigin ? `window: ${context.windowOrigin}` : ""),
      button("Compact now", "Compact the context now", "compact", { class: "secondary" }),
    ),
    bar,
    chart(points),
    el("p", { class: "context-legend" },
      `${points.length} turn${points.length === 1 ? "" : "s"} shown · ${compactions} compaction${compactions === 1 ? "" : "s"} (dashed lines) · shaded: stable prefix`),
  );
}

function chart(points: Point[]): SVGSVGElement {
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "context-chart", role: "img", "aria-label": "Context tokens per turn" });
  if (points.length === 0) return root;
  // Scaled to the turns shown (the meter above gives the share of the window).
  const top = Math.max(...points.map((p) => p.tokens), 1) * 1.15;
  const x = (i: number): number => (points.length === 1 ? WIDTH / 2 : (i / (points.length - 1)) * WIDTH);
  const y = (tokens: number): number => HEIGHT - (tokens / top) * (HEIGHT - 4);
  const line = points.map((p, i) => `${i === 0 ? "M" : "L"}${x(i).toFixed(1)},${y(p.tokens).toFixed(1)}`).join(" ");
  const stable = points.map((p, i) => `L${x(i).toFixed(1)},${y(p.stable).toFixed(1)}`).join(" ");
  root.append(
    svg("path", { d: `M0,${HEIGHT} ${stable} L${x(points.length - 1).toFixed(1)},${HEIGHT} Z`, class: "chart-stable" }),
    svg("path", { d: line, class: "chart-line" }),
  );
  points.forEach((p, i) => {
    if (p.compaction) root.append(svg("line", { x1: x(i), x2: x(i), y1: 0, y2: HEIGHT, class: "chart-compaction" }));
  });
  return root;
}
