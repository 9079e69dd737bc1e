// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import "../src/highlighter"; // the page loads it after its first paint; here it is there from the start
import { blockStarts, IncrementalMarkdown, renderMarkdown } from "../src/markdown";

function streamInto(text: string, step: number): { container: HTMLElement; renders: string[] } {
  const container = document.createElement("div");
  const renders: string[] = [];
  const markdown = new IncrementalMarkdown(container, (source) => {
    renders.push(source);
    return renderMarkdown(source);
  });
  for (let i = step; i < text.length + step; i += step) markdown.update(text.slice(0, i));
  markdown.update(text, true);
  return { container, renders };
}

describe("blockStarts", () => {
  it("finds each top-level block", () => {
    expect(blockStarts("a\n\n- x\n- y\n\n```js\nz\n```\n")).toEqual([0, 3, 12]);
  });
});

describe("IncrementalMarkdown", () => {
  const answer = "Intro paragraph.\n\n- one\n- two\n\n```python\ndef f():\n    return 1\n```\n\nAfter the code.";

  it("ends with the same DOM as rendering the whole text at once", () => {
    const { container } = streamInto(answer, 3);
    expect(container.textContent).toBe(new DOMParser().parseFromString(renderMarkdown(answer), "text/html").body.textContent);
    expect(container.querySelectorAll("li")).toHaveLength(2);
    expect(container.querySelector("pre code.hljs .hljs-keyword")?.textContent).toBe("def");
  });

  it("renders finished blocks once: only the growing last block is redrawn", () => {
    const { renders } = streamInto(answer, 1);
    const intro = renders.filter((r) => r.startsWith("Intro"));
    // While the intro grows it is the last block; it goes with the next block until that
    // one's first line is complete ("- " could still turn out to be anything), and once the
    // list's first item is there it is never rendered again.
    expect(renders.filter((r) => r.startsWith("Intro paragraph.\n\n")).length).toBeLessThanOrEqual(1 + "- one\n".length);
    expect(intro.length).toBeLessThan(30);
    expect(renders.some((r) => r.includes("Intro") && r.includes("- one\n"))).toBe(false);
  });

  it("keeps a list that a blank line interrupts one list at every step", () => {
    for (const text of ["1. one\n2. two\n\n3. three\n\nAfter.", "Intro.\n\n- a\n- b\n\n- c\n"]) {
      const container = document.createElement("div");
      const markdown = new IncrementalMarkdown(container);
      for (let i = 1; i <= text.length; i += 1) {
        markdown.update(text.slice(0, i));
        expect(container.querySelectorAll("ol, ul").length, JSON.stringify(text.slice(0, i))).toBeLessThanOrEqual(1);
      }
      markdown.update(text, true);
      expect(container.querySelectorAll("li")).toHaveLength(3);
    }
  });

  it("keeps the DOM node of a finished block while later text streams", () => {
    const container = document.createElement("div");
    const markdown = new IncrementalMarkdown(container);
    markdown.update("First.\n\nSecond");
    const first = container.firstElementChild;
    markdown.update("First.\n\nSecond and more\n\n- a");
    expect(container.firstElementChild).toBe(first);
    expect(first?.textContent?.trim()).toBe("First.");
  });

  it("shows a half-finished fence as code, not as paragraphs", () => {
    const container = document.createElement("div");
    const markdown = new IncrementalMarkdown(container);
    markdown.update("```ts\nconst a = 1;\nconst b");
    expect(container.querySelector("pre code")?.textContent).toBe("const a = 1;\nconst b");
    expect(container.querySelector("p")).toBeNull();
    markdown.update("```ts\nconst a = 1;\nconst b = 2;\n```\n\nDone.");
    expect(container.querySelectorAll("pre")).toHaveLength(1);
    expect(container.querySelector("p")?.textContent).toBe("Done.");
  });

  it("starts over when the text does not extend what was shown (a TTSR retry)", () => {
    const container = document.createElement("div");
    const markdown = new IncrementalMarkdown(container);
    markdown.update("Bad answer.\n\nMore bad");
    markdown.update("Good");
    expect(container.textContent?.trim()).toBe("Good");
  });
});

describe("renderMarkdown", () => {
  it("links URLs the model wrote, not file names", () => {
    const doc = new DOMParser().parseFromString(renderMarkdown("See main.py and lib.rs, or https://example.com/docs."), "text/html");
    expect([...doc.querySelectorAll("a")].map((a) => a.getAttribute("href"))).toEqual(["https://example.com/docs"]);
  });

  it("shows the model's HTML as text and drops script URLs", () => {
    const html = renderMarkdown('<img src=x onerror="alert(1)"> [x](javascript:alert(1)) <script>alert(2)</script>');
    const doc = new DOMParser().parseFromString(html, "text/html");
    expect(doc.querySelector("img, script")).toBeNull();
    expect(doc.querySelector("a[href^=javascript]")).toBeNull();
    expect(doc.body.textContent).toContain("<script>");
  });
});
