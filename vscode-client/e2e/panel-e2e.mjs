// The chat panel in a real VS Code: code-server with the packaged extension, the real
// `memento lsp` and a scripted model server (set up by tests/clients/test_vscode_e2e.py,
// which scripts the replies this walk expects). Everything goes through the panel's page,
// found in the workbench's nested webview frames: a prompt typed there streams a reply with
// markdown and code, an edit shows as a tool card, Stop ends a turn that hangs, the status-bar
// meter opens the panel's context view, Restore to here puts the file back, and a subagent
// streams in a card under its task's card until its own Stop stops it; after Developer: Reload
// Window the panel shows that conversation again at once; Compact now adds a divider that
// opens on the step's audit, and its Undo brings the original messages back.
// Prints one PASS/FAIL line per step and "N passed, N failed"; a screenshot per step.
//
// Environment: MEMENTO_E2E_URL (the workbench), MEMENTO_E2E_SHOTS (screenshot folder),
// MEMENTO_E2E_WORKSPACE (the folder the workbench has open).

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Walk, Workbench } from "./driver.mjs";

const METER = "memento.memento.contextMeter";
const wb = new Workbench({ url: process.env.MEMENTO_E2E_URL, shots: process.env.MEMENTO_E2E_SHOTS || "shots", timeout: 30000 });
let panel; // the panel page's frame

const fileText = (name) => readFileSync(join(process.env.MEMENTO_E2E_WORKSPACE, name), "utf8");

/** Types `text` into the panel's input and sends it with Enter, as a user does. */
async function ask(text) {
  const input = panel.locator("#input");
  await input.fill(text);
  await input.press("Enter");
}

const walk = new Walk(wb);
const step = (name, work) => walk.step(name, work);

try {
  await step("the chat panel opens in Memento's side bar", async () => {
    await wb.open();
    // Activation (onStartupFinished) and the server's start can take a minute on a loaded machine.
    await wb.until("the context meter", () => wb.statusBarItem(METER), 120000);
    await wb.openContainer("memento");
    // The chat gets the side bar's height, as a user who works in it arranges it.
    for (const view of ["Checkpoints", "Compactions", "MCP Servers"]) {
      const header = wb.page.locator(`.part.sidebar .pane-header[aria-label=${JSON.stringify(`${view} Section`)}]`);
      if ((await header.getAttribute("aria-expanded")) === "true") await header.click();
    }
    panel = await wb.webview("#timeline");
    await panel.locator("#input").waitFor({ state: "visible" });
    return { input: await panel.locator("#input").getAttribute("placeholder") };
  });

  await step("a prompt from the panel streams a reply with markdown and a code block", async () => {
    await ask("Write a hello function");
    const row = panel.locator(".row-assistant", { hasText: "Here is" }).last();
    await row.locator("strong", { hasText: "the function" }).waitFor();
    await row.locator("pre code .hljs-keyword", { hasText: "def" }).waitFor();
    await panel.locator(".row-assistant[data-state=done]", { hasText: "Call it with" }).waitFor();
    return { user: await panel.locator(".row-user").last().innerText(), code: await row.locator("pre code").innerText() };
  });

  await step("an edit shows as a tool card with its file and status", async () => {
    await wb.openFile("app.py");
    await ask("Say goodbye instead");
    const card = panel.locator(".tool-card[data-tool=edit]").last();
    await card.locator(".tool-status", { hasText: "done" }).waitFor();
    await panel.locator(".row-assistant[data-state=done]", { hasText: "Changed the greeting." }).waitFor();
    await wb.until("the edit in the editor", async () => (await wb.editorText()).includes('print("goodbye")'));
    return { target: await card.locator(".tool-target").innerText(), status: await card.locator(".tool-status").innerText() };
  });

  await step("Stop ends a turn that is still streaming", async () => {
    await ask("Explain every greeting ever written");
    const streaming = panel.locator(".row-assistant[data-state=streaming]", { hasText: "Let me list them" });
    await streaming.waitFor();
    const stop = panel.getByRole("button", { name: "Stop the turn" });
    await stop.click();
    await panel.locator(".row-assistant[data-state=aborted] .turn-aborted", { hasText: "Stopped" }).waitFor();
    await stop.waitFor({ state: "hidden" });
    return { stopped: true };
  });

  await step("the status-bar meter opens the panel's context view", async () => {
    await wb.page.locator(`.part.statusbar [id=${JSON.stringify(METER)}]`).click();
    await panel.locator("#context:not([hidden]) .context-chart").waitFor();
    await panel.locator("#context .context-figure", { hasText: "/ 100k" }).waitFor();
    await wb.screenshot("panel"); // README's picture of the panel
    return { figure: await panel.locator("#context .context-figure").innerText() };
  });

  await step("Restore to here puts the conversation and the file back", async () => {
    // The checkpoint taken before the edit holds the session as the first reply left it, so
    // "Restore to here" is on that reply. Scroll up to it, as a reader does (rows out of view
    // are not in the page: the list is virtualized).
    const row = panel.locator(".row-assistant", { has: panel.locator(".restore") }).last();
    await wb.until("the restorable turn on screen", async () => {
      if ((await row.count()) > 0) return true;
      await panel.locator("#timeline").evaluate((t) => { t.scrollTop -= t.clientHeight / 2; });
      return false;
    });
    if (!(await row.innerText()).includes("Call it with")) throw new Error(`Restore to here on: ${await row.innerText()}`);
    const restore = row.locator(".restore");
    await restore.locator("summary").click();
    await restore.getByRole("menuitem", { name: "Restore the conversation and the files to here" }).click();
    await panel.locator("#banner", { hasText: /Restored 1 file/ }).waitFor();
    await wb.until("app.py restored in the editor and on disk", async () =>
      (await wb.editorText()).includes('print("hello")') && fileText("app.py") === 'print("hello")\n');
    // The conversation is back at the checkpoint: the edit's turn and the stopped one are gone.
    for (const prompt of ["Say goodbye instead", "Explain every greeting"]) {
      await panel.locator(".row-user", { hasText: prompt }).waitFor({ state: "detached" });
    }
    await panel.locator(".row-user", { hasText: "Write a hello function" }).waitFor();
    return { banner: await panel.locator("#banner").innerText() };
  });

  await step("a subagent streams in a card under its task's card and stops by its own Stop", async () => {
    await ask("Ask a reader what app.py prints");
    const task = panel.locator(".tool-part", { has: panel.locator(".tool-card[data-tool=task]") }).last();
    const child = task.locator(".child-card[data-subagent=explore]");
    await child.locator(".child-activity", { hasText: "Reading app.py" }).waitFor();
    const live = await child.locator("summary").innerText();
    await child.getByRole("button", { name: "Stop subagent explore" }).click();
    await child.locator(".child-status", { hasText: "stopped" }).waitFor();
    // The parent's turn goes on with the task's result, and the card stays under its task.
    await panel.locator(".row-assistant[data-state=done]", { hasText: "The reader was stopped" }).waitFor();
    await task.locator(".child-card[data-subagent=explore] .child-status", { hasText: "stopped" }).waitFor();
    return { live, after: await child.getAttribute("aria-label") };
  });

  await step("after Developer: Reload Window the panel shows the last conversation at once", async () => {
    // The server resumes the session it had; the panel draws its transcript, no picker needed.
    await wb.runCommand("Developer: Reload Window");
    await wb.page.waitForFunction(() => performance.getEntriesByName("code/didLoadExtensions").length > 0);
    await wb.until("the context meter", () => wb.statusBarItem(METER), 120000);
    await wb.openContainer("memento");
    panel = await wb.webview("#timeline");
    await panel.locator(".row-assistant[data-state=done]", { hasText: "The reader was stopped" }).waitFor();
    await panel.locator(".row-user", { hasText: "Ask a reader what app.py prints" }).waitFor();
    const task = panel.locator(".tool-part", { has: panel.locator(".tool-card[data-tool=task]") }).last();
    await task.locator(".child-card[data-subagent=explore] .child-status", { hasText: "stopped" }).waitFor();
    // The picker names the resumed session (it is the current one, listed with its title).
    const picked = await panel.locator("#session").evaluate((select) => select.selectedOptions[0]?.textContent ?? "");
    if (picked === "") throw new Error("the session picker shows no session after the reload");
    return { picked, rows: await panel.locator(".row").count() };
  });

  await step("Compact now adds a divider that opens on its audit, and its Undo restores the conversation", async () => {
    if (await panel.locator("#context").isHidden()) await panel.locator("#toggle-context").click();
    await panel.getByRole("button", { name: "Compact the context now" }).click();
    // The compaction's divider (an undo adds a divider of its own after it).
    const divider = panel.locator(".divider.compaction.audited.level-compact").first();
    await divider.waitFor();
    const label = await divider.locator(".divider-label").innerText();
    // From the keyboard, as the divider's summary is a control.
    const summary = divider.locator("summary");
    await summary.focus();
    await summary.press("Enter");
    const audit = divider.locator(".divider-audit");
    await audit.locator("h2", { hasText: "Summarised" }).waitFor();
    await audit.getByText("E2E-SUMMARY").first().waitFor();
    const summarised = await audit.locator("h2", { hasText: "Summarised" }).innerText();
    await wb.screenshot("panel-audit");
    await audit.getByRole("button", { name: "Undo this compaction" }).click();
    // Undone is the server's word: its patch marks the step, and the audit is read again.
    const undone = panel.locator(".divider.compaction.audited.undone").first();
    await undone.locator(".audit-undone").waitFor();
    await undone.locator(".divider-audit li", { hasText: "Undone by" }).waitFor();
    // The next request carries the original messages again (the test reads the model's requests).
    await ask("What did I ask first?");
    await panel.locator(".row-assistant[data-state=done]", { hasText: "You asked for a hello function." }).waitFor();
    return { label, summarised, undone: await undone.locator(".divider-label").innerText() };
  });

  console.log("blocked non-loopback requests:", JSON.stringify(wb.blocked));
} finally {
  await walk.close();
}
walk.report();
