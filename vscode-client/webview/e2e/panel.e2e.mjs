// The chat panel in a real Chromium: a scripted reply streams in, and every part of the
// timeline the issue names is checked, with screenshots in ../test-output/.
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { conversation, op, Patches, toolPart } from "./fixtures.mjs";
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
const S = new Patches("s1", 100);
const R = "r:u:p1"; // the reply to the prompt below
const reply = (key, state, more = {}) => ({ kind: "reply", key, state, parts: [], ...more });
const user = (id, text) => ({ kind: "user", key: `u:${id}`, entryId: id, text, steer: false });
const lastRequest = async () => Math.max(0, ...(await p.posted()).map((m) => m.requestId ?? 0));
const transcript = (requestId, page) => p.send({ type: "transcript", requestId, pageJson: JSON.stringify(page) });

test("opens with the stored transcript and the session list", async () => {
  const tail = await p.waitForPost("transcript");
  assert.equal(tail.cursor, undefined);
  await p.waitForPost("ready");
  const list = await p.waitForPost("listSessions");
  await transcript(tail.requestId, S.page(stored, "u:20"));
  await p.send({ type: "sessions", requestId: list.requestId, sessions: [
    { id: "s1", path: "/x/s1.jsonl", title: "Refactor the parser", updatedAt: new Date().toISOString() },
    { id: "s2", path: "/x/s2.jsonl", updatedAt: "2025-12-01T00:00:00Z" },
  ] });
  await page.locator(".row-user", { hasText: "Question 59" }).waitFor();
  // The picker names the session the transcript is of (the server resumed it).
  assert.equal(await page.locator("#session").inputValue(), "s1");
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
  await p.notices({ kind: "turn", turnId: TURN, state: "started" }, S.patch(op.item(user("p1", "Write a hello function"))));
  await page.locator(".row-user", { hasText: "Write a hello function" }).waitFor();
  const answer = "Here is **the function**:\n\n```python\ndef hello(name):\n    return f\"hi {name}\"\n```\n\nCall it with `hello(\"you\")`.";
  await p.notices(S.patch(op.item(reply(R, "streaming")), op.part(R, R, { kind: "text", key: `${R}/0.0`, text: "" })));
  for (let i = 0; i < answer.length; i += 7) await p.notices(S.patch(op.text(R, `${R}/0.0`, answer.slice(i, i + 7))));
  const row = page.locator(".row-assistant[data-state=streaming]");
  await row.locator("pre code.hljs .hljs-keyword", { hasText: "def" }).waitFor();
  await row.locator("strong", { hasText: "the function" }).waitFor();
  await row.locator("p code", { hasText: 'hello("you")' }).waitFor();
  assert.equal(await page.locator("#stop").isVisible(), true);
  assert.deepEqual(await page.evaluate(() => window.__violations), []);
  await shot("02-streamed");
});

test("a tool card shows the tool, its file and status, and opens the diff against the turn's checkpoint", async () => {
  const key = `${R}/0.1`;
  const edit = toolPart(key, "c1", "edit");
  await p.notices(S.patch(op.part(R, R, edit), op.text(R, key, '{"path": "src/app')), S.patch(op.text(R, key, '.py", "old": "a", "new": "b"}')),
    S.patch(op.update(R, { ...edit, args: '{"path": "src/app.py", "old": "a", "new": "b"}', target: "src/app.py", status: "running", subagents: undefined })),
    S.patch(op.item({ kind: "checkpoint", key: "k:1", checkpointId: "cp1", label: "Write a hello function" })),
    S.patch(op.update(R, { ...edit, args: '{"path": "src/app.py", "old": "a", "new": "b"}', target: "src/app.py", status: "done", output: "edited", subagents: undefined })),
    { kind: "checkpoints", checkpoints: [{ id: "cp1", label: "before edit", createdAt: new Date().toISOString(), files: ["src/app.py"] }] });
  const card = page.locator(".tool-card[data-tool=edit]");
  await card.locator(".tool-status", { hasText: "done" }).waitFor();
  assert.equal(await card.locator(".tool-target").innerText(), "src/app.py");
  await card.locator("summary").click();
  await card.getByRole("button", { name: "Open the diff of src/app.py" }).click();
  const diff = await p.waitForPost("openDiff");
  assert.deepEqual([diff.path, diff.checkpointId], ["src/app.py", "cp1"]);
  await shot("03-tool-card");
});

test("a TTSR retry drops the partial answer and marks the rewrite with the reminder", async () => {
  const bad = `${R}/1.0`;
  await p.notices(S.patch(op.part(R, R, { kind: "text", key: bad, text: "Now I will print(debug) the" })));
  await page.locator(".row-assistant", { hasText: "print(debug)" }).waitFor();
  const mark = { kind: "ttsr", key: "m:1", rules: ["no-print"], interrupted: true, attempt: 2 };
  await p.notices(S.patch(op.remove(R, bad), op.part(R, R, mark)));
  const shown = page.locator(".ttsr-mark", { hasText: "rewritten: rule no-print" });
  await shown.waitFor();
  await p.notices(S.patch(op.update(R, { ...mark, reminder: "Use logging, never print()." })));
  await page.waitForFunction(() => document.querySelector(".ttsr-mark")?.getAttribute("title") === "Use logging, never print().");
  assert.doesNotMatch(await text(".row-assistant[data-state=streaming]"), /print\(debug\)/);
  await shown.hover();
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
  await p.notices(S.patch(op.update(R, reply(R, "streaming", { retry: { attempt: 3, reason: "rate limited (429)", retryInMs: 5000 }, parts: undefined }))));
  const banner = page.locator("#banner.retrying");
  await banner.waitFor();
  assert.match(await banner.innerText(), /Retrying in [45]s… \(attempt 3\) — rate limited \(429\)/);
  await shot("05-retrying");
  await p.notices(S.patch(op.update(R, reply(R, "streaming", { parts: undefined })), op.part(R, R, { kind: "text", key: `${R}/2.0`, text: "Recovered." })));
  await banner.waitFor({ state: "hidden" });
});

test("advisor cards post apply, dismiss and make-rule", async () => {
  const note = (id, text) => op.item({ kind: "advisor", key: `a:${id}`, noteId: id, note: text, severity: "concern", channel: "aside", path: "src/app.py", line: 4 });
  await p.notices(S.patch(note("n1", "The edit drops the error check."), note("n2", "Naming is off."), note("n3", "Tests print to stdout.")));
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
  const relief = { kind: "relief", key: "c:live:0", level: "compact", reason: "threshold", phase: "started", tokensBefore: 120000 };
  await p.notices(S.patch(op.item(relief)));
  await page.locator(".divider.compaction.phase-started").waitFor();
  await p.notices(S.patch(op.update("c:live:0", { ...relief, phase: "finished", tokensAfter: 30000, summarizer: "model" })),
    { kind: "context", tokens: 30000, contextWindow: 128000, percent: 23.4, stablePrefixTokens: 21000 });
  await page.locator(".divider.compaction", { hasText: "120k → 30k tokens, summary by the model" }).waitFor();
  assert.match(await page.locator("#meter-label").innerText(), /30k \/ 128k · 23%/);
  await page.getByRole("button", { name: "Context view" }).click();
  await page.locator(".context-chart path.chart-line").waitFor();
  await shot("07-compaction-context");
});

test("the compaction's divider opens on its audit; Undo asks the extension, and the server's patch marks it undone", async () => {
  const relief = { kind: "relief", key: "c:live:0", level: "compact", reason: "threshold", phase: "finished", tokensBefore: 120000, tokensAfter: 30000, summarizer: "model" };
  await p.notices(S.patch(op.update("c:live:0", { ...relief, audit: "e42" })));
  const divider = page.locator(".divider.compaction.audited", { has: page.locator('[data-key="c:live:0"]') });
  const summary = divider.locator("summary");
  await summary.waitFor();
  assert.match(await summary.getAttribute("aria-label"), /Show the audit/);
  await summary.focus();
  await summary.press("Enter");
  const asked = await p.waitForPost("audit", (m) => m.id === "e42");
  await divider.locator(".audit-loading").waitFor();
  const audit = {
    id: "e42", at: "2026-01-01T00:00:00Z", level: "compact", reason: "threshold", tokensBefore: 120000, tokensAfter: 30000,
    summarizer: "model", model: "main-model", summary: "## Goal\nParse the config",
    summarized: [{ entryId: "u20", role: "user", tokens: 40, preview: "Question 20" }],
    kept: [{ entryId: "u59", role: "user", tokens: 12, preview: "Question 59" }],
    cut: { firstKeptEntryId: "u59", splitTurn: false, why: "the last turn fits the 20k kept verbatim" },
    carried: [{ entryId: "m1", role: "memory", tokens: 9, preview: "Decision: keep the parser pure" }],
  };
  await p.send({ type: "audit", requestId: asked.requestId, id: "e42", audit });
  const body = divider.locator(".divider-audit");
  await body.locator("h2", { hasText: "Summarised (1)" }).waitFor();
  for (const said of ["Kept verbatim (1)", "Carried across by the memory (1)", "Summary"]) await body.locator("h2", { hasText: said }).waitFor();
  assert.match(await body.innerText(), /120,000 → 30,000[\s\S]*main-model[\s\S]*Cut at u59: the last turn fits[\s\S]*Parse the config/);
  // The redraw keeps the keyboard's place on the divider.
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("data-key")), "c:live:0");
  await shot("07b-compaction-audit");
  const undo = body.getByRole("button", { name: "Undo this compaction" });
  await undo.click();
  await p.waitForPost("undoRelief", (m) => m.id === "e42");
  assert.equal(await undo.isDisabled(), true);
  // Declined (it would not fit, and the user kept it): Undo is offered again.
  await p.send({ type: "undoSettled", id: "e42" });
  await page.locator(".divider-audit button:not([disabled])", { hasText: /^Undo$/ }).waitFor();
  const before = (await p.posted()).filter((m) => m.type === "undoRelief").length;
  await undo.click();
  await page.waitForFunction((n) => window.__posted.filter((m) => m.type === "undoRelief").length > n, before);
  assert.deepEqual((await p.posted()).filter((m) => m.type === "undoRelief").at(-1), { type: "undoRelief", id: "e42" });
  // Nothing is drawn undone until the server says so.
  assert.equal(await page.locator(".divider.compaction.undone").count(), 0);
  await p.notices(S.patch(op.update("c:live:0", { ...relief, audit: "e42", undoneBy: "e50" })));
  await divider.locator(".divider-label", { hasText: "· undone" }).waitFor();
  await divider.locator(".audit-undone", { hasText: "Undone by e50" }).waitFor();
  assert.equal(await body.getByRole("button", { name: "Undo this compaction" }).count(), 0);
  // The audit held predates the undo: the page reads it again.
  const again = await p.waitForPost("audit", (m, seen) => m.id === "e42" && m.requestId !== seen, asked.requestId);
  await p.send({ type: "audit", requestId: again.requestId, id: "e42", audit: { ...audit, undoneBy: "e50" } });
  await body.locator("li", { hasText: "Undone by: e50" }).waitFor();
});

test("Pin on a message and a tool card posts its entry id; pinned shows only when the server's patch says so", async () => {
  // A message sent while the turn runs and its answer, at the bottom (rows out of view are not in the page).
  const Q = "r:u:p2";
  const read = { kind: "tool", key: `${Q}/0.0`, toolCallId: "c9", name: "read", args: '{"path": "src/cfg.py"}', target: "src/cfg.py", status: "done", output: "X = 1", resultEntryId: "e9", subagents: [] };
  await p.notices(S.patch(op.item(user("p2", "Keep the config parser pure")), op.item(reply(Q, "done", { entryId: "e10", parts: [read, { kind: "text", key: `${Q}/0.1`, text: "Read it." }] }))));
  const row = page.locator('.row-user[data-key="u:p2"]');
  const pin = row.getByRole("button", { name: /^Pin this message/ });
  await pin.focus();
  await pin.press("Enter");
  assert.deepEqual(await p.waitForPost("pin"), { type: "pin", entryId: "p2" });
  await row.locator("button.pin-toggle[disabled]", { hasText: "Pinning…" }).waitFor(); // drawn on the next frame
  assert.equal(await row.locator(".pin-mark").count(), 0);
  // Refused (the turn still runs): said in the banner, the row as it was, Pin offered again.
  await p.send({ type: "pinSettled", entryId: "p2" });
  await p.send({ type: "failed", op: "pin", message: "a turn is running; pin when it has finished" });
  await page.locator("#banner", { hasText: "pin failed: a turn is running" }).waitFor();
  await row.locator("button.pin-toggle:not([disabled])", { hasText: /^Pin$/ }).waitFor();
  assert.equal(await row.locator(".pin-mark").count(), 0);
  await page.locator("#banner [data-action=dismiss-status]").click();
  // Again, and the server pins it: its patch draws the mark; the keyboard stays on the button.
  await pin.focus();
  await pin.press("Enter");
  await page.waitForFunction(() => window.__posted.filter((m) => m.type === "pin").length === 2);
  await p.notices(S.patch(op.update("u:p2", { ...user("p2", "Keep the config parser pure"), pinned: true })));
  await p.send({ type: "pinSettled", entryId: "p2" });
  await row.locator(".pin-mark", { hasText: "📌 pinned" }).waitFor();
  await row.locator("button.pin-toggle:not([disabled])", { hasText: /^Unpin$/ }).waitFor(); // answered
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("data-entry")), "p2");
  // The reply has its own Pin (the stored message its text ends with).
  assert.equal(await page.locator(`.row-assistant[data-key="${Q}"] .row-head button.pin-toggle`).getAttribute("data-entry"), "e10");
  // A tool result, pinned from its card's actions.
  const card = page.locator(".tool-card[data-call=c9]");
  await card.locator("summary").click();
  await card.getByRole("button", { name: /^Pin the result of read on src\/cfg\.py/ }).click();
  assert.deepEqual(await p.waitForPost("pin", (m) => m.entryId === "e9"), { type: "pin", entryId: "e9" });
  await p.notices(S.patch(op.update(Q, { ...read, subagents: undefined, pinned: true })));
  await p.send({ type: "pinSettled", entryId: "e9" });
  await card.locator("summary .pin-mark").waitFor();
  assert.match(await card.locator("summary").getAttribute("aria-label"), /, pinned$/);
  await shot("07c-pinned");
  await card.getByRole("button", { name: "Unpin the result of read on src/cfg.py" }).click();
  assert.deepEqual(await p.waitForPost("unpin"), { type: "unpin", entryId: "e9" });
  // Nothing is drawn unpinned until the server says so.
  assert.equal(await card.locator("summary .pin-mark").count(), 1);
  await p.notices(S.patch(op.update(Q, { ...read, subagents: undefined })));
  await p.send({ type: "pinSettled", entryId: "e9" });
  await card.locator("summary .pin-mark").waitFor({ state: "detached" });
  await card.getByRole("button", { name: /^Pin the result of read/ }).waitFor();
  assert.equal(await row.locator(".pin-mark").count(), 1); // the message stays pinned
  // Leave the conversation as the next tests expect it.
  await p.notices(S.patch(op.remove(Q, Q), op.remove("u:p2", "u:p2")));
  await row.waitFor({ state: "detached" });
});

test("the turn ends; an error shows where it happened with a retry", async () => {
  await p.notices({ kind: "turn", turnId: TURN, state: "error" },
    S.patch(op.update(R, reply(R, "error", { parts: undefined })), op.part(R, R, { kind: "error", key: "e:1", message: "provider said 500" })));
  await page.locator(".turn-error", { hasText: "provider said 500" }).waitFor();
  const after = await lastRequest();
  await page.getByRole("button", { name: "Retry this prompt" }).click();
  assert.equal((await p.waitForPost("prompt", (m, last) => m.text === "Write a hello function" && m.requestId > last, after)).text, "Write a hello function");
  await shot("08-error");
});

test("Restore to here is on the row before the checkpoint's turn, and posts the chosen rewind", async () => {
  const restore = page.locator(".restore").first();
  // Rows out of view are not in the page (the list is virtualized): scroll up to it, as a reader does.
  for (let i = 0; i < 40 && (await restore.count()) === 0; i += 1) {
    await page.locator("#timeline").evaluate((t) => { t.scrollTop -= t.clientHeight / 2; });
    await p.frame();
  }
  const row = page.locator(".row", { has: page.locator(".restore") });
  assert.match(await row.innerText(), /Answer 59\./);
  await restore.locator("summary").click();
  await page.getByRole("menuitem", { name: "Restore the conversation only to here" }).click();
  const rewind = await p.waitForPost("rewind");
  assert.deepEqual({ checkpointId: rewind.checkpointId, mode: rewind.mode }, { checkpointId: "cp1", mode: "conversation" });
  await shot("09-restore");
});

test("scrolling up pages older items in, keeping the reader's place", async () => {
  // Until now nothing asked for an older page.
  assert.deepEqual((await p.posted()).filter((m) => m.type === "transcript" && m.cursor !== undefined), []);
  await page.locator("#timeline").evaluate((t) => { t.scrollTop = 0; });
  const older = await p.waitForPost("transcript", (m) => m.cursor !== undefined);
  assert.equal(older.cursor, "u:20");
  const top = await page.locator(".row-user").first().innerText();
  await transcript(older.requestId, S.page(conversation(20, { first: 0, prefix: "o" })));
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

/** A reply of its own, streaming, with a text part the deltas go to. */
const streamingReply = async (key) => {
  await p.notices(S.patch(op.item(reply(key, "streaming")), op.part(key, key, { kind: "text", key: `${key}/0.0`, text: "" })));
  return (delta) => p.notices(S.patch(op.text(key, `${key}/0.0`, delta)));
};
const finish = (key, state = "done") => p.notices(S.patch(op.update(key, reply(key, state, { parts: undefined }))));

test("a streamed list that a blank line interrupts stays one list", async () => {
  await toBottom();
  const key = "r:list";
  const delta = await streamingReply(key);
  const row = page.locator(`.row-assistant[data-key="${key}"]`);
  for (const piece of ["Steps:\n\n1. build", "\n2. test\n", "\n3", ". ship\n", "\nDone."]) {
    await delta(piece);
    await p.frame();
    assert.ok((await row.locator("ol").count()) <= 1, `after ${JSON.stringify(piece)}`);
  }
  assert.equal(await row.locator("ol > li").count(), 3);
  await finish(key);
});

test("follows the stream at the bottom only: scrolling up stops it, the bottom resumes it", async () => {
  await toBottom();
  const delta = await streamingReply("r:follow");
  const gap = () => page.locator("#timeline").evaluate((t) => t.scrollHeight - t.scrollTop - t.clientHeight);
  const paragraph = (i) => delta(`Paragraph ${i} of a long answer that keeps going.\n\n`);
  for (let i = 0; i < 40; i += 1) await paragraph(i);
  await p.frame();
  assert.ok((await gap()) <= 24, "at the bottom while following");
  await page.locator("#timeline").evaluate((t) => { t.scrollTop -= 300; });
  await p.frame();
  const top = await page.locator("#timeline").evaluate((t) => t.scrollTop);
  for (let i = 40; i < 60; i += 1) await paragraph(i);
  await p.frame();
  assert.equal(await page.locator("#timeline").evaluate((t) => t.scrollTop), top, "the reader's place holds");
  await page.locator("#timeline").evaluate((t) => { t.scrollTop = t.scrollHeight; });
  await p.frame();
  for (let i = 60; i < 70; i += 1) await paragraph(i);
  await p.frame();
  assert.ok((await gap()) <= 24, "following again");
  await finish("r:follow");
});

test("the retrying banner reads well without a reason or a delay", async () => {
  await p.notices(S.patch(op.item(reply("r:retry", "streaming", { retry: { attempt: 2 } }))));
  const banner = page.locator("#banner.retrying");
  await banner.waitFor();
  assert.equal(await banner.innerText(), "Retrying… (attempt 2)");
  await finish("r:retry", "aborted");
  await banner.waitFor({ state: "hidden" });
});

test("a finished tool call shows its output while the turn still runs", async () => {
  await toBottom();
  const key = "r:tool";
  await p.notices(S.patch(op.item(reply(key, "streaming", { parts: [
    toolPart(`${key}/0.0`, "c9", "read", { args: '{"path": "src/big.py"}', target: "src/big.py", status: "done", output: "line 1\nline 2\n", outputTruncated: true }),
  ] }))));
  const card = page.locator(".tool-card[data-call=c9]");
  await card.locator(".tool-status", { hasText: "done" }).waitFor();
  await card.locator("summary").click();
  assert.equal(await card.locator(".tool-output").innerText(), "line 1\nline 2\n");
  assert.match(await card.locator(".tool-note").innerText(), /start of the output/);
  await shot("11-tool-output");
  await finish(key);
});

test("a page that opens mid-turn shows the turn as the server has it, and goes on from there", async () => {
  const reopened = await browser.context.newPage();
  reopened.on("pageerror", (error) => { throw error; });
  await reopened.goto(server.origin);
  const q = panel(reopened);
  const tail = await q.waitForPost("transcript");
  const live = new Patches("s-mid", 50);
  const key = "r:u:p";
  const items = [
    ...conversation(2),
    user("p", "read both files"),
    reply(key, "streaming", { parts: [
      { kind: "text", key: `${key}/0.0`, text: "Step one: reading a.py." },
      toolPart(`${key}/0.1`, "k1", "read", { args: '{"path":"a.py"}', target: "a.py", status: "done", output: "print('a')\n" }),
      { kind: "text", key: `${key}/1.0`, text: "Step two: now b" },
    ] }),
  ];
  // A patch the page holds already (sent before the page was read) is not applied twice.
  await q.notices({ kind: "patch", sessionId: "s-mid", seq: 50, ops: [op.text(key, `${key}/1.0`, "STALE")] });
  await q.send({ type: "transcript", requestId: tail.requestId, pageJson: JSON.stringify(live.page(items)) });
  await reopened.locator(".row-assistant[data-state=streaming]", { hasText: "Step two: now b" }).waitFor();
  await q.notices({ kind: "patch", sessionId: "s-mid", seq: 50, ops: [op.text(key, `${key}/1.0`, "STALE")] }, live.patch(op.text(key, `${key}/1.0`, ".py.")));
  await reopened.locator(".row-assistant[data-state=streaming]", { hasText: "Step two: now b.py." }).waitFor();
  const shown = await reopened.locator("#timeline").innerText();
  assert.equal(shown.split("Step one: reading a.py.").length - 1, 1, shown);
  assert.doesNotMatch(shown, /STALE/);
  assert.equal(await reopened.locator("#stop").isVisible(), true);
  const card = reopened.locator(".tool-card[data-call=k1]");
  await card.locator("summary").click();
  assert.equal(await card.locator(".tool-output").innerText(), "print('a')\n");
  await reopened.screenshot({ path: join(OUTPUT, "panel-12-reopened-mid-turn.png") });
  await reopened.close();
});

test("a panel opened before the server runs waits for it, and shows the conversation once it answers", async () => {
  const early = await browser.context.newPage();
  early.on("pageerror", (error) => { throw error; });
  await early.goto(server.origin);
  const q = panel(early);
  const first = await q.waitForPost("transcript");
  await q.send({ type: "failed", requestId: first.requestId, op: "transcript", message: "the Memento server is not running" });
  await early.locator("#banner", { hasText: "Waiting for the Memento server" }).waitFor();
  const again = await q.waitForPost("transcript", (m, before) => m.requestId > before, first.requestId);
  await q.send({ type: "transcript", requestId: again.requestId, pageJson: JSON.stringify(new Patches("s-late", 3).page(conversation(1))) });
  await early.locator(".row-user", { hasText: "Question 0" }).waitFor();
  await early.locator("#banner").waitFor({ state: "hidden" });
  await early.close();
});

test("subagents stream as nested cards under their task's card, each with its own Stop", async () => {
  await toBottom();
  const key = "r:task";
  const task = `${key}/0.0`;
  const card = (id, state) => ({ kind: "subagent", key: `s:${id}`, id, agent: "explore", state, prompt: `${id}: map the parser`, items: [] });
  await p.notices({ kind: "turn", turnId: "t-task", state: "started" },
    S.patch(op.item(reply(key, "streaming")), op.part(key, key, toolPart(task, "k-task", "task", { args: '{"tasks": [{"agent": "explore", "prompt": "map the parser"}]}', status: "running" }))),
    S.patch(op.part(key, task, card("explore", "running")), op.part(key, task, card("explore-2", "queued"))));
  const part = page.locator(".tool-part", { has: page.locator(".tool-card[data-call=k-task]") });
  const first = part.locator(".child-card[data-subagent=explore]");
  await first.waitFor();
  assert.equal(await part.locator(".subagents").getAttribute("aria-label"), "Subagents of this task");
  assert.equal(await part.locator(".child-card").count(), 2);
  // The child's own words stream into its card (the collapsed card shows the latest).
  const child = "s:explore/r:u:c";
  await p.notices(S.patch(op.part(key, "s:explore", { ...user("c", "explore: map the parser"), key: "s:explore/u:c" }),
    op.part(key, "s:explore", reply(child, "streaming")), op.part(key, child, { kind: "text", key: `${child}/0.0`, text: "" })));
  for (const delta of ["Reading ", "parser.py ", "now."]) await p.notices(S.patch(op.text(key, `${child}/0.0`, delta)));
  await first.locator(".child-activity", { hasText: "writing · Reading parser.py now." }).waitFor();
  const grep = toolPart(`${child}/0.1`, "g1", "grep", { args: '{"pattern": "def parse"}', status: "running" });
  await p.notices(S.patch(op.part(key, child, grep)));
  await first.locator(".child-activity", { hasText: "running grep" }).waitFor();
  await first.locator("summary").first().click();
  await first.locator(".child-body .tool-card[data-tool=grep]").waitFor();
  assert.match(await first.locator(".child-body").innerText(), /Task: explore: map the parser[\s\S]*Reading parser.py now\./);
  // The conversation shows none of the child's words.
  assert.doesNotMatch(await page.locator(`.row-assistant[data-key="${key}"] > .assistant-body > .markdown`).allInnerTexts().then((t) => t.join("")), /Reading parser/);
  // An open card stays open while it streams.
  await p.notices(S.patch(op.update(key, { ...grep, status: "done", output: "parser.py:3: def parse", subagents: undefined })));
  await first.locator(".child-body .tool-card[data-tool=grep] .tool-status", { hasText: "done" }).waitFor();
  assert.equal(await first.locator("details.child-details").evaluate((d) => d.open), true);
  await shot("13-subagents-live");
  // Each live child has its own Stop, which names it.
  await part.getByRole("button", { name: "Stop subagent explore-2" }).click();
  assert.deepEqual(await p.waitForPost("abortSubagent"), { type: "abortSubagent", id: "explore-2" });
  await p.notices(S.patch(op.update(key, { ...card("explore-2", "aborted"), error: "stopped before it finished", items: undefined })));
  const second = part.locator(".child-card[data-subagent=explore-2]");
  await second.locator(".child-status", { hasText: "stopped" }).waitFor();
  assert.equal(await second.getByRole("button").count(), 0);
  // The child ends with its result; the turn goes on.
  await p.notices(S.patch(op.update(key, reply(child, "done", { parts: undefined })),
    op.update(key, { ...card("explore", "completed"), result: JSON.stringify({ parser: "src/parser.py" }, null, 2), items: undefined })));
  await first.locator(".child-result", { hasText: '"parser": "src/parser.py"' }).waitFor();
  assert.equal(await page.locator("#stop").isVisible(), true);
  assert.equal(await first.getAttribute("aria-label"), "Subagent explore (explore), done");
  assert.deepEqual(await page.evaluate(() => window.__violations), []);
  await shot("14-subagents-done");
  await p.notices({ kind: "turn", turnId: "t-task", state: "finished" });
  await finish(key);
});

test("a session opened from the picker shows each task's children as collapsed cards", async () => {
  const last = await lastRequest();
  await p.send({ type: "sessionChanged", id: "s2" });
  const tail = await p.waitForPost("transcript", (m, after) => m.requestId > after && m.cursor === undefined, last);
  const key = "r:u:u";
  const card = (id, agent, prompt, more) => ({ kind: "subagent", key: `s:${id}`, id, agent, prompt, items: [], ...more });
  const items = [
    user("u", "map and fix the parser"),
    reply(key, "done", { parts: [
      toolPart(`${key}/0.0`, "k-old", "task", { status: "done", args: JSON.stringify({ tasks: [{ agent: "explore", prompt: "map the parser" }, { agent: "worker", prompt: "fix the parser" }] }), subagents: [
        card("explore", "explore", "map the parser", { state: "completed", result: JSON.stringify({ parser: "src/parser.py" }, null, 2) }),
        card("worker", "worker", "fix the parser", { state: "failed", error: "the patch did not apply", merge: "failed" }),
      ] }),
      { kind: "text", key: `${key}/1.0`, text: "The explorer mapped it; the fix did not apply." },
    ] }),
  ];
  await transcript(tail.requestId, new Patches("s2", 9).page(items));
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
  // The old session's rows are gone, and its patches no longer apply.
  assert.equal(await page.locator(".row-user", { hasText: "Question 59" }).count(), 0);
  await shot("15-subagents-history");
});

test("the code highlighter loads after the first rows are drawn, then colours the stored code", async () => {
  const opened = await browser.context.newPage();
  opened.on("pageerror", (error) => { throw error; });
  await opened.goto(server.origin);
  const q = panel(opened);
  const tail = await q.waitForPost("transcript");
  const highlighterScript = () => opened.evaluate(() => document.querySelector('script[src$="/panel-highlight.js"]') !== null);
  assert.equal(await highlighterScript(), false, "the highlighter is not part of the page's start");
  const items = [
    user("u", "show me"),
    reply("r:u:u", "done", { parts: [{ kind: "text", key: "r:u:u/0.0", text: "Here:\n\n```python\ndef shown():\n    return 1\n```\n" }] }),
  ];
  await q.send({ type: "transcript", requestId: tail.requestId, pageJson: JSON.stringify(new Patches("s3", 1).page(items)) });
  const row = opened.locator(".row-assistant[data-state=done]");
  await row.locator("pre code.hljs .hljs-keyword", { hasText: "def" }).waitFor();
  assert.equal(await highlighterScript(), true);
  assert.equal(await row.locator("code[data-lang]").count(), 0, "every block was coloured");
  assert.deepEqual(await opened.evaluate(() => window.__violations), []);
  await opened.close();
});
