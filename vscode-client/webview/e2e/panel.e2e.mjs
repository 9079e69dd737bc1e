// The chat panel in a real Chromium: a scripted reply streams in, and every part of the
// timeline the issue names is checked, with screenshots in ../test-output/.
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { conversation } from "./fixtures.mjs";
import { launch, OUTPUT, panel, startServer } from "./harness.mjs";

let server, browser, page, p;
const shot = (name) => page.screenshot({ path: join(OUTPUT, `panel-${name}.png`) });
const text = (selector) => page.locator(selector).allInnerTexts().then((t) => t.join("\n"));

before(async () => {
  await mkdir(OUTPUT, { recursive: true });
  server = await startServer();
  browser = await launch();
  page = await browser.context.newPage();
  page.on("pageerror", (error) => { throw error; });
  await page.goto(server.origin);
  p = panel(page);
});

after(async () => {
  await browser?.close();
  await server?.close();
});

const stored = conversation(40, { first: 20 }); // turns 20..59; older ones on the next page
const TURN = "t1";

test("opens with the stored history and the session list", async () => {
  const tail = await p.waitForPost("history", (m) => m.tail);
  assert.equal(tail.cursor, undefined);
  await p.waitForPost("ready");
  const list = await p.waitForPost("listSessions");
  await p.send({ type: "history", requestId: tail.requestId, entriesJson: JSON.stringify(stored), nextCursor: "60", tail: true });
  await p.send({ type: "sessions", requestId: list.requestId, current: "s1", sessions: [
    { id: "s1", path: "/x/s1.jsonl", title: "Refactor the parser", updatedAt: new Date().toISOString() },
    { id: "s2", path: "/x/s2.jsonl", updatedAt: "2025-12-01T00:00:00Z" },
  ] });
  await page.locator(".row-user", { hasText: "Question 59" }).waitFor();
  assert.match(await text("#session"), /Refactor the parser/);
  // Virtualized: far fewer rows in the DOM than in the session.
  assert.ok((await page.locator(".row").count()) < 40);
  await shot("01-history");
});

test("a prompt streams a reply with markdown and a highlighted code block", async () => {
  await page.locator("#input").fill("Write a hello function");
  await page.locator("#input").press("Enter");
  const prompt = await p.waitForPost("prompt");
  assert.equal(prompt.text, "Write a hello function");
  await p.send({ type: "prompted", requestId: prompt.requestId, turnId: TURN });
  await p.notices({ kind: "turn", turnId: TURN, state: "started" });
  const reply = "Here is **the function**:\n\n```python\ndef hello(name):\n    return f\"hi {name}\"\n```\n\nCall it with `hello(\"you\")`.";
  for (let i = 0; i < reply.length; i += 7) {
    await p.notices({ kind: "stream", turnId: TURN, stream: "text", delta: reply.slice(i, i + 7) });
  }
  const row = page.locator(".row-assistant[data-state=streaming]");
  await row.locator("pre code.hljs .hljs-keyword", { hasText: "def" }).waitFor();
  await row.locator("strong", { hasText: "the function" }).waitFor();
  await row.locator("p code", { hasText: 'hello("you")' }).waitFor();
  assert.equal(await page.locator("#stop").isVisible(), true);
  assert.deepEqual(await page.evaluate(() => window.__violations), []);
  await shot("02-streamed");
});

test("a tool card shows the tool, its file and status, and opens the diff", async () => {
  await p.notices({ kind: "stream", turnId: TURN, stream: "tool", toolCallId: "c1", toolName: "edit", delta: '{"path": "src/app' },
    { kind: "stream", turnId: TURN, stream: "tool", toolCallId: "c1", toolName: "edit", delta: '.py", "old": "a", "new": "b"}' },
    { kind: "tool", turnId: TURN, toolCallId: "c1", toolName: "edit", state: "started" },
    { kind: "tool", turnId: TURN, toolCallId: "c1", toolName: "edit", state: "finished", isError: false },
    { kind: "checkpoints", checkpoints: [{ id: "cp1", label: "before edit", createdAt: new Date().toISOString(), entryId: stored[stored.length - 3].id, files: ["src/app.py"] }] });
  const card = page.locator(".tool-card[data-tool=edit]");
  await card.locator(".tool-status", { hasText: "done" }).waitFor();
  assert.equal(await card.locator(".tool-target").innerText(), "src/app.py");
  await card.locator("summary").click();
  await card.getByRole("button", { name: "Open the diff of src/app.py" }).click();
  const diff = await p.waitForPost("openDiff");
  assert.equal(diff.path, "src/app.py");
  await shot("03-tool-card");
});

test("a TTSR retry drops the partial answer and marks the rewrite with the reminder", async () => {
  await p.notices({ kind: "stream", turnId: TURN, stream: "text", delta: "Now I will print(debug) the" },
    { kind: "turn", turnId: TURN, state: "retrying", attempt: 2, rules: ["no-print"] });
  const mark = page.locator(".ttsr-mark", { hasText: "rewritten: rule no-print" });
  await mark.waitFor();
  await p.notices({ kind: "reminder", turnId: TURN, rules: ["no-print"], text: '<system-interrupt reason="rule_violation" rule="no-print">\nYour output was interrupted.\n\nUse logging, never print().\n</system-interrupt>' });
  await page.waitForFunction(() => document.querySelector(".ttsr-mark")?.getAttribute("title") === "Use logging, never print().");
  assert.doesNotMatch(await text(".row-assistant[data-state=streaming]"), /print\(debug\)/);
  await mark.hover();
  await shot("04-ttsr");
});

test("Stop posts an abort; the steering input posts a steer while the turn runs", async () => {
  await page.locator("#input").fill("use logging instead");
  await page.locator("#input").press("Enter");
  assert.equal((await p.waitForPost("steer")).text, "use logging instead");
  await page.getByRole("button", { name: "Stop the turn" }).click();
  await p.waitForPost("abort");
});

test("the retrying banner counts down to the next attempt", async () => {
  await p.notices({ kind: "turn", turnId: TURN, state: "retrying", attempt: 3, reason: "rate limited (429)", retryInMs: 5000 });
  const banner = page.locator("#banner.retrying");
  await banner.waitFor();
  assert.match(await banner.innerText(), /Retrying in [45]s… \(attempt 3\) — rate limited \(429\)/);
  await shot("05-retrying");
  await p.notices({ kind: "stream", turnId: TURN, stream: "text", delta: "Recovered." });
  await banner.waitFor({ state: "hidden" });
});

test("advisor cards post apply, dismiss and make-rule", async () => {
  const note = (id, text) => ({ kind: "advisor", noteId: id, note: text, severity: "concern", channel: "aside", path: "src/app.py", line: 4 });
  await p.notices(note("n1", "The edit drops the error check."), note("n2", "Naming is off."), note("n3", "Tests print to stdout."));
  for (const [id, name, action] of [["n1", "Apply the advisor's note", "apply"], ["n2", "Dismiss the advisor's note", "dismiss"], ["n3", "Make a rule from the advisor's note", "toRule"]]) {
    const card = page.locator(".advisor-card", { has: page.locator(`[data-note=${id}]`) });
    await card.getByRole("button", { name }).click();
    const posted = await p.waitForPost("advisor", (m, noteId) => m.noteId === noteId, id);
    assert.equal(posted.action, action);
  }
  // The card names the line the server gave (1-based, as Problems shows it) and opens that one.
  const card = page.locator(".advisor-card", { has: page.locator("[data-note=n1]") });
  const link = card.getByRole("button", { name: "Open src/app.py:4" });
  assert.equal((await link.innerText()).trim(), "src/app.py:4");
  await link.click();
  const opened = await p.waitForPost("openFile", (m) => m.path === "src/app.py");
  assert.equal(opened.line, 4);
  await shot("06-advisor");
});

test("a compaction shows as a divider with tokens before and after", async () => {
  await p.notices({ kind: "compaction", phase: "started", level: "compact", reason: "threshold", tokensBefore: 120000 });
  await page.locator(".divider.compaction.phase-started").waitFor();
  await p.notices({ kind: "compaction", phase: "finished", level: "compact", reason: "threshold", tokensBefore: 120000, tokensAfter: 30000, summarizer: "model" },
    { kind: "context", tokens: 30000, contextWindow: 128000, percent: 23.4, stablePrefixTokens: 21000 });
  await page.locator(".divider.compaction", { hasText: "120k → 30k tokens, summary by the model" }).waitFor();
  assert.match(await page.locator("#meter-label").innerText(), /30k \/ 128k · 23%/);
  await page.getByRole("button", { name: "Context view" }).click();
  await page.locator(".context-chart path.chart-line").waitFor();
  await shot("07-compaction-context");
});

test("the turn ends; an error shows where it happened with a retry", async () => {
  await p.notices({ kind: "turn", turnId: TURN, state: "error", error: "provider said 500" });
  await page.locator(".turn-error", { hasText: "provider said 500" }).waitFor();
  const sync = await p.waitForPost("history", (m) => m.tail && m.requestId > 3);
  await page.getByRole("button", { name: "Retry this prompt" }).click();
  assert.equal((await p.waitForPost("prompt", (m, after) => m.text === "Write a hello function" && m.requestId > after, sync.requestId)).text, "Write a hello function");
  await shot("08-error");
});

test("Restore to here posts the chosen rewind", async () => {
  const restore = page.locator(".restore").first();
  await restore.waitFor();
  await restore.locator("summary").click();
  await page.getByRole("menuitem", { name: "Restore the conversation only to here" }).click();
  const rewind = await p.waitForPost("rewind");
  assert.deepEqual({ checkpointId: rewind.checkpointId, mode: rewind.mode }, { checkpointId: "cp1", mode: "conversation" });
  await shot("09-restore");
});

test("scrolling up pages older history in, keeping the reader's place", async () => {
  // Until now the reader stayed at the bottom: nothing asked for older history.
  assert.deepEqual((await p.posted()).filter((m) => m.type === "history" && !m.tail), []);
  await page.locator("#timeline").evaluate((t) => { t.scrollTop = 0; });
  const older = await p.waitForPost("history", (m) => !m.tail);
  assert.equal(older.cursor, "60");
  const top = await page.locator(".row-user").first().innerText();
  await p.send({ type: "history", requestId: older.requestId, entriesJson: JSON.stringify(conversation(20, { first: 0, prefix: "o" })), tail: false });
  await page.waitForFunction(() => document.querySelectorAll(".row").length > 0);
  await p.frame();
  // The row the reader was on is still on screen; the older turns are above it.
  await page.locator(".row-user", { hasText: top.split("\n").pop() }).waitFor();
  await page.locator("#timeline").evaluate((t) => { t.scrollTop = 0; });
  await page.locator(".row-user", { hasText: "Question 0:" }).waitFor();
  await shot("10-older-page");
});

/** Back to the end of the timeline (the tests above left the reader at the top). */
const toBottom = async () => {
  await page.locator("#timeline").evaluate((t) => { t.scrollTop = t.scrollHeight; });
  await p.frame();
};

test("a streamed list that a blank line interrupts stays one list", async () => {
  await toBottom();
  const turn = "t-list";
  await p.notices({ kind: "turn", turnId: turn, state: "started" });
  const row = page.locator(`.row-assistant[data-key="turn:${turn}"]`);
  for (const delta of ["Steps:\n\n1. build", "\n2. test\n", "\n3", ". ship\n", "\nDone."]) {
    await p.notices({ kind: "stream", turnId: turn, stream: "text", delta });
    await p.frame();
    assert.ok((await row.locator("ol").count()) <= 1, `after ${JSON.stringify(delta)}`);
  }
  assert.equal(await row.locator("ol > li").count(), 3);
  await p.notices({ kind: "turn", turnId: turn, state: "finished" });
});

test("follows the stream at the bottom only: scrolling up stops it, the bottom resumes it", async () => {
  await toBottom();
  const turn = "t-follow";
  await p.notices({ kind: "turn", turnId: turn, state: "started" });
  const gap = () => page.locator("#timeline").evaluate((t) => t.scrollHeight - t.scrollTop - t.clientHeight);
  const paragraph = (i) => ({ kind: "stream", turnId: turn, stream: "text", delta: `Paragraph ${i} of a long answer that keeps going.\n\n` });
  for (let i = 0; i < 40; i += 1) await p.notices(paragraph(i));
  await p.frame();
  assert.ok((await gap()) <= 24, "at the bottom while following");
  await page.locator("#timeline").evaluate((t) => { t.scrollTop -= 300; });
  await p.frame();
  const top = await page.locator("#timeline").evaluate((t) => t.scrollTop);
  for (let i = 40; i < 60; i += 1) await p.notices(paragraph(i));
  await p.frame();
  assert.equal(await page.locator("#timeline").evaluate((t) => t.scrollTop), top, "the reader's place holds");
  await page.locator("#timeline").evaluate((t) => { t.scrollTop = t.scrollHeight; });
  await p.frame();
  for (let i = 60; i < 70; i += 1) await p.notices(paragraph(i));
  await p.frame();
  assert.ok((await gap()) <= 24, "following again");
  await p.notices({ kind: "turn", turnId: turn, state: "finished" });
});

test("the retrying banner reads well without a reason or a delay", async () => {
  const turn = "t-retry";
  await p.notices({ kind: "turn", turnId: turn, state: "started" }, { kind: "turn", turnId: turn, state: "retrying", attempt: 2 });
  const banner = page.locator("#banner.retrying");
  await banner.waitFor();
  assert.equal(await banner.innerText(), "Retrying… (attempt 2)");
  await p.notices({ kind: "turn", turnId: turn, state: "aborted" });
  await banner.waitFor({ state: "hidden" });
});

test("a finished tool call shows its output while the turn still runs", async () => {
  await toBottom();
  const turn = "t-tool";
  await p.notices({ kind: "turn", turnId: turn, state: "started" },
    { kind: "stream", turnId: turn, stream: "tool", toolCallId: "c9", toolName: "read", delta: '{"path": "src/big.py"}' },
    { kind: "tool", turnId: turn, toolCallId: "c9", toolName: "read", state: "started" },
    { kind: "tool", turnId: turn, toolCallId: "c9", toolName: "read", state: "finished", isError: false, output: "line 1\nline 2\n", outputTruncated: true });
  const card = page.locator(".tool-card[data-call=c9]");
  await card.locator(".tool-status", { hasText: "done" }).waitFor();
  await card.locator("summary").click();
  assert.equal(await card.locator(".tool-output").innerText(), "line 1\nline 2\n");
  assert.match(await card.locator(".tool-note").innerText(), /start of the output/);
  await shot("11-tool-output");
  await p.notices({ kind: "turn", turnId: turn, state: "finished" });
});

test("a page that opens mid-turn shows the turn's steps once, with their results", async () => {
  const reopened = await browser.context.newPage();
  reopened.on("pageerror", (error) => { throw error; });
  await reopened.goto(server.origin);
  const q = panel(reopened);
  const tail = await q.waitForPost("history", (m) => m.tail);
  const message = (id, m) => ({ id, type: "message", message: m });
  const entries = [
    ...conversation(2),
    message("p", { role: "user", content: "read both files" }),
    message("a1", { role: "assistant", content: [{ type: "text", text: "Step one: reading a.py." }, { type: "toolCall", id: "k1", name: "read", arguments: { path: "a.py" } }] }),
    message("r1", { role: "toolResult", toolCallId: "k1", content: [{ type: "text", text: "print('a')\n" }] }),
  ];
  const notices = [
    { kind: "turn", turnId: "live", state: "started" },
    { kind: "stream", turnId: "live", stream: "text", delta: "Step one: reading a.py." },
    { kind: "stream", turnId: "live", stream: "tool", toolCallId: "k1", toolName: "read", delta: '{"path":"a.py"}' },
    { kind: "tool", turnId: "live", toolCallId: "k1", toolName: "read", state: "started" },
    { kind: "tool", turnId: "live", toolCallId: "k1", toolName: "read", state: "finished", output: "print('a')\n" },
    { kind: "stream", turnId: "live", stream: "text", delta: "Step two: now b" },
  ];
  await q.send({ type: "history", requestId: tail.requestId, entriesJson: JSON.stringify(entries), tail: true, running: { turnId: "live", entryId: "p", notices } });
  await reopened.locator(".row-assistant[data-state=streaming]", { hasText: "Step two: now b" }).waitFor();
  await q.notices({ kind: "stream", turnId: "live", stream: "text", delta: ".py." });
  await reopened.locator(".row-assistant[data-state=streaming]", { hasText: "Step two: now b.py." }).waitFor();
  const shown = await reopened.locator("#timeline").innerText();
  assert.equal(shown.split("Step one: reading a.py.").length - 1, 1, shown);
  assert.equal(await reopened.locator("#stop").isVisible(), true);
  const card = reopened.locator(".tool-card[data-call=k1]");
  await card.locator("summary").click();
  assert.equal(await card.locator(".tool-output").innerText(), "print('a')\n");
  await reopened.screenshot({ path: join(OUTPUT, "panel-12-reopened-mid-turn.png") });
  await reopened.close();
});

test("subagents stream as nested cards under their task's card, each with its own Stop", async () => {
  await toBottom();
  const turn = "t-task";
  const tag = (id) => ({ subagentId: id, parentTurnId: turn });
  const info = (id, agent, state, more = {}) => ({ kind: "subagent", id, agent, state, prompt: `${id}: map the parser`, isolation: "none", parentTurnId: turn, parentToolCallId: "k-task", ...more });
  await p.notices({ kind: "turn", turnId: turn, state: "started" },
    { kind: "stream", turnId: turn, stream: "tool", toolCallId: "k-task", toolName: "task", delta: '{"tasks": [{"agent": "explore", "prompt": "map the parser"}]}' },
    { kind: "tool", turnId: turn, toolCallId: "k-task", toolName: "task", state: "started" },
    info("explore", "explore", "running"), info("explore-2", "explore", "queued"));
  const part = page.locator(".tool-part", { has: page.locator(".tool-card[data-call=k-task]") });
  const first = part.locator(".child-card[data-subagent=explore]");
  await first.waitFor();
  assert.equal(await part.locator(".subagents").getAttribute("aria-label"), "Subagents of this task");
  assert.equal(await part.locator(".child-card").count(), 2);
  // The child's own words stream into its card (the collapsed card shows the latest).
  await p.notices({ kind: "turn", turnId: "c1", state: "started", ...tag("explore") });
  for (const delta of ["Reading ", "parser.py ", "now."]) await p.notices({ kind: "stream", turnId: "c1", stream: "text", delta, ...tag("explore") });
  await first.locator(".child-activity", { hasText: "writing · Reading parser.py now." }).waitFor();
  await p.notices({ kind: "stream", turnId: "c1", stream: "tool", toolCallId: "g1", toolName: "grep", delta: '{"pattern": "def parse"}', ...tag("explore") },
    { kind: "tool", turnId: "c1", toolCallId: "g1", toolName: "grep", state: "started", ...tag("explore") });
  await first.locator(".child-activity", { hasText: "running grep" }).waitFor();
  await first.locator("summary").first().click();
  await first.locator(".child-body .tool-card[data-tool=grep]").waitFor();
  assert.match(await first.locator(".child-body").innerText(), /Task: explore: map the parser[\s\S]*Reading parser.py now\./);
  // The conversation shows none of the child's words.
  assert.doesNotMatch(await page.locator(`.row-assistant[data-key="turn:${turn}"] > .assistant-body > .markdown`).allInnerTexts().then((t) => t.join("")), /Reading parser/);
  // An open card stays open while it streams.
  await p.notices({ kind: "tool", turnId: "c1", toolCallId: "g1", toolName: "grep", state: "finished", output: "parser.py:3: def parse", ...tag("explore") });
  await first.locator(".child-body .tool-card[data-tool=grep] .tool-status", { hasText: "done" }).waitFor();
  assert.equal(await first.locator("details.child-details").evaluate((d) => d.open), true);
  await shot("13-subagents-live");
  // Each live child has its own Stop, which names it.
  await part.getByRole("button", { name: "Stop subagent explore-2" }).click();
  assert.deepEqual(await p.waitForPost("abortSubagent"), { type: "abortSubagent", id: "explore-2" });
  await p.notices(info("explore-2", "explore", "aborted"));
  const second = part.locator(".child-card[data-subagent=explore-2]");
  await second.locator(".child-status", { hasText: "stopped" }).waitFor();
  assert.equal(await second.getByRole("button").count(), 0);
  // The task's result gives each card its outcome; the turn goes on.
  await p.notices({ kind: "turn", turnId: "c1", state: "finished", ...tag("explore") }, info("explore", "explore", "completed"),
    { kind: "tool", turnId: turn, toolCallId: "k-task", toolName: "task", state: "finished", output: JSON.stringify({ results: [
      { id: "explore", agent: "explore", status: "completed", data: { parser: "src/parser.py" } },
      { id: "explore-2", agent: "explore", status: "aborted", error: "stopped before it finished" },
    ] }) });
  await first.locator(".child-result", { hasText: '"parser": "src/parser.py"' }).waitFor();
  assert.equal(await page.locator("#stop").isVisible(), true);
  assert.equal(await first.getAttribute("aria-label"), "Subagent explore (explore), done");
  assert.deepEqual(await page.evaluate(() => window.__violations), []);
  await shot("14-subagents-done");
  await p.notices({ kind: "turn", turnId: turn, state: "finished" });
});

test("a session read from history shows each task's children as collapsed cards", async () => {
  const last = Math.max(0, ...(await p.posted()).map((m) => m.requestId ?? 0));
  await p.send({ type: "sessionChanged", id: "s2" });
  const tail = await p.waitForPost("history", (m, after) => m.tail && m.requestId > after, last);
  const message = (id, m) => ({ id, type: "message", message: m });
  const results = { results: [
    { id: "explore", agent: "explore", status: "completed", data: { parser: "src/parser.py" } },
    { id: "worker", agent: "worker", status: "failed", error: "the patch did not apply", merge: { state: "failed", files: ["a.py"] } },
  ] };
  await p.send({ type: "history", requestId: tail.requestId, tail: true, entriesJson: JSON.stringify([
    message("u", { role: "user", content: "map and fix the parser" }),
    message("a", { role: "assistant", content: [{ type: "toolCall", id: "k-old", name: "task", arguments: { tasks: [{ agent: "explore", prompt: "map the parser" }, { agent: "worker", prompt: "fix the parser" }] } }] }),
    message("r", { role: "toolResult", toolCallId: "k-old", toolName: "task", content: [{ type: "text", text: JSON.stringify(results) }] }),
    message("b", { role: "assistant", content: [{ type: "text", text: "The explorer mapped it; the fix did not apply." }] }),
  ]) });
  const part = page.locator(".tool-part", { has: page.locator(".tool-card[data-call=k-old]") });
  const worker = part.locator(".child-card[data-subagent=worker]");
  await worker.waitFor();
  assert.equal(await worker.getAttribute("aria-label"), "Subagent worker (worker), failed");
  assert.match(await worker.locator("summary").innerText(), /worker\s+failed\s+merge failed · the patch did not apply/);
  assert.equal(await part.getByRole("button", { name: /^Stop subagent/ }).count(), 0);
  const explore = part.locator(".child-card[data-subagent=explore]");
  assert.equal(await explore.locator("details").evaluate((d) => d.open), false);
  await explore.locator("summary").click();
  assert.match(await explore.locator(".child-body").innerText(), /Task: map the parser[\s\S]*Result[\s\S]*"parser": "src\/parser.py"/);
  await shot("15-subagents-history");
});

test("the code highlighter loads after the first rows are drawn, then colours the stored code", async () => {
  const opened = await browser.context.newPage();
  opened.on("pageerror", (error) => { throw error; });
  await opened.goto(server.origin);
  const q = panel(opened);
  const tail = await q.waitForPost("history", (m) => m.tail);
  const highlighterScript = () => opened.evaluate(() => document.querySelector('script[src$="/panel-highlight.js"]') !== null);
  assert.equal(await highlighterScript(), false, "the highlighter is not part of the page's start");
  const entries = [
    { id: "u", type: "message", message: { role: "user", content: "show me" } },
    { id: "a", type: "message", message: { role: "assistant", content: [{ type: "text", text: "Here:\n\n```python\ndef shown():\n    return 1\n```\n" }] } },
  ];
  await q.send({ type: "history", requestId: tail.requestId, entriesJson: JSON.stringify(entries), tail: true });
  const row = opened.locator(".row-assistant[data-state=done]");
  await row.locator("pre code.hljs .hljs-keyword", { hasText: "def" }).waitFor();
  assert.equal(await highlighterScript(), true);
  assert.equal(await row.locator("code[data-lang]").count(), 0, "every block was coloured");
  assert.deepEqual(await opened.evaluate(() => window.__violations), []);
  await opened.close();
});
