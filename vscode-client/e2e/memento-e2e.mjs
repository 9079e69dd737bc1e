// Memento in a real VS Code, step by step, as a user would go: the workbench is code-server
// with the packaged extension, the real `memento lsp` and a scripted model server (set up
// by tests/clients/test_vscode_e2e.py, which also scripts the replies this walk expects).
// Prints one PASS/FAIL line per step and "N passed, N failed"; a screenshot per step.
//
// Environment: MEMENTO_E2E_URL (the workbench), MEMENTO_E2E_SHOTS (screenshot folder).

import { Walk, Workbench } from "./driver.mjs";

const METER = "memento.memento.contextMeter";
const wb = new Workbench({ url: process.env.MEMENTO_E2E_URL, shots: process.env.MEMENTO_E2E_SHOTS || "shots", timeout: 30000 });

/** The whole text of the editor in front: the editor draws only the lines in view (the
 * audit document is longer than the window, its summary last), so page through it. */
async function wholeEditorText() {
  await wb.page.locator(".part.editor .editor-instance .monaco-editor .view-lines").first().click();
  await wb.page.keyboard.press("Control+Home");
  const lines = ".part.editor .editor-instance .monaco-editor .view-lines";
  const seen = [await wb.editorText()];
  for (let i = 0; i < 20; i++) {
    const before = await wb.page.locator(lines).first().innerText();
    await wb.page.keyboard.press("PageDown");
    // The end of the document: the lines in view stay as they were.
    const moved = await wb.page
      .waitForFunction(([selector, was]) => document.querySelector(selector)?.innerText !== was, [lines, before], { timeout: 2000 })
      .then(() => true, () => false);
    if (!moved) break;
    seen.push(await wb.editorText());
  }
  return seen.join(" ");
}

const walk = new Walk(wb);
const step = (name, work) => walk.step(name, work);

try {
  await step("workbench loads with Memento", async () => {
    const ms = await wb.open();
    // Activation (onStartupFinished) and the server's start can take a minute on a loaded machine.
    const meter = await wb.until("the context meter", () => wb.statusBarItem(METER), 120000);
    return { loadedMs: ms, meter };
  });

  await step("the meter shows the context after a prompt", async () => {
    await wb.runCommand("Memento: Send Prompt");
    await wb.answerInput("Say hello");
    // The scripted reply reports 6,000 input and 20 output tokens of a 100k window.
    return wb.until("meter with the reply's usage", async () => {
      const meter = await wb.statusBarItem(METER);
      return meter && /6k\/100k · 6\.0%/.test(meter) && meter;
    });
  });

  await step("clicking the meter opens the chat panel", async () => {
    await wb.page.locator(`.part.statusbar [id=${JSON.stringify(METER)}]`).click();
    return wb.until("the chat view in the Memento side bar", async () => {
      const header = wb.page.locator('.part.sidebar .pane-header[aria-label="Chat Section"]');
      const page = wb.page.locator(".part.sidebar iframe.webview, iframe.webview");
      return (await header.count()) > 0 && (await page.count()) > 0 && (await page.first().isVisible()) && "shown";
    });
  });

  await step("Create Checkpoint from the palette adds a tree item", async () => {
    await wb.openContainer("memento");
    await wb.runCommand("Memento: Create Checkpoint");
    await wb.answerInput("before the edit");
    return wb.until("the checkpoint in the tree", async () => {
      const rows = await wb.treeRows("Checkpoints");
      return rows.some((r) => r.includes("before the edit")) && rows;
    });
  });

  await step("a scripted turn edits the open file", async () => {
    await wb.openFile("app.py");
    await wb.until("app.py in the editor", async () => (await wb.editorText()).includes('print("hello")'));
    await wb.runCommand("Memento: Send Prompt");
    await wb.answerInput("Say goodbye instead");
    return wb.until("the agent's edit in the editor", async () => {
      const now = await wb.editorText();
      return now.includes('print("goodbye")') && now;
    });
  });

  await step("the advisor's note is in the Problems view with its quick fixes", async () => {
    const rows = await wb.until("the note in Problems", async () => {
      const found = await wb.problems();
      return found.some((r) => r.includes("goodbye has no test")) && found;
    });
    const fixes = await wb.until("the quick fixes", async () => {
      const offered = await wb.quickFixes(2); // the note is on line 2 (the scripted advise call)
      return offered.some((f) => f.includes("Advisor: apply")) && offered;
    });
    await wb.screenshot("quick-fixes");
    await wb.page.keyboard.press("Escape");
    for (const wanted of ["Advisor: apply", "Advisor: dismiss", "Advisor: make a rule"]) {
      if (!fixes.some((f) => f.includes(wanted))) throw new Error(`no quick fix ${wanted}: ${JSON.stringify(fixes)}`);
    }
    const note = rows.filter((r) => r.includes("goodbye has no test"));
    if (!note.some((r) => /\b(Ln 2|line 2)\b/.test(r))) throw new Error(`the note in Problems is not on line 2: ${JSON.stringify(note)}`);
    return { problems: note, fixes };
  });

  await step("the panel's advisor card names the line Problems shows and opens it", async () => {
    await wb.openContainer("memento");
    const panel = await wb.webview(".advisor-card");
    // The meter's click left the panel on its context view: back to the conversation.
    if (await panel.locator("#context:not([hidden])").count()) await panel.locator("#toggle-context").click();
    const link = panel.locator(".advisor-card [data-action=open-file]").first();
    const where = (await link.innerText()).trim();
    if (where !== "app.py:2") throw new Error(`the card says ${JSON.stringify(where)}, Problems says line 2`);
    await wb.page.locator(".part.editor .editor-instance .monaco-editor .view-lines .view-line").first().click({ position: { x: 2, y: 5 } });
    await wb.until("the cursor on line 1", async () => (await wb.statusBarItem("status.editor.selection"))?.startsWith("Ln 1,"));
    await link.click();
    const cursor = await wb.until("the cursor on the note's line", async () => {
      const at = await wb.statusBarItem("status.editor.selection");
      return at?.startsWith("Ln 2,") && at;
    });
    return { card: where, cursor };
  });

  await step("a checkpoint's file opens as a diff against the workspace", async () => {
    await wb.openContainer("memento");
    await wb.clickTreeRow("Checkpoints", "before the edit");
    await wb.until("the changed file under the checkpoint", async () => (await wb.treeRows("Checkpoints")).includes("app.py"));
    await wb.clickTreeRow("Checkpoints", /^app\.py$/);
    const sides = await wb.until("the diff editor", async () => {
      const diff = await wb.diffSides();
      return diff.original.includes('print("hello")') && diff.modified.includes('print("goodbye")') && diff;
    });
    return { title: await wb.activeEditorTitle(), ...sides };
  });

  await step("Rewind to Checkpoint (files only) restores the file and clears the note on it", async () => {
    await wb.openFile("app.py");
    await wb.runCommand("Memento: Rewind to Checkpoint…");
    await wb.pickRow(/before the edit/);
    const question = await wb.dialog();
    for (const button of ["Conversation and Files", "Conversation Only", "Files Only"]) {
      if (!question.buttons.includes(button)) throw new Error(`no ${button} in ${JSON.stringify(question)}`);
    }
    // Each button's line says what it does; Files Only keeps the conversation.
    for (const line of ["Conversation and Files: puts back app.py", "Files Only: puts back app.py; the conversation stays as it is"]) {
      if (!question.detail.includes(line)) throw new Error(`detail: ${question.detail}`);
    }
    await wb.screenshot("rewind-confirmation");
    await wb.clickDialogButton("Files Only");
    const restored = await wb.until("the file back in the editor", async () => {
      const now = await wb.editorText();
      return now.includes('print("hello")') && now;
    });
    // The note was about the agent's line, which the rewind put back: it goes from Problems.
    await wb.until("the note gone from Problems", async () => !(await wb.problems()).some((r) => r.includes("goodbye has no test")));
    return { question: question.message, restored };
  });

  await step("Compact Context adds a compaction to the sidebar", async () => {
    await wb.openContainer("memento");
    await wb.runCommand("Memento: Compact Context");
    await wb.answerInput("Keep the greeting");
    const rows = await wb.until("the compaction in the tree", async () => {
      const found = await wb.treeRows("Compactions");
      return found.some((r) => /^Compacted /.test(r)) && found;
    });
    await wb.clickTreeRow("Compactions", "Compacted");
    const title = await wb.until("the summary document", async () => {
      const active = await wb.activeEditorTitle();
      return active.startsWith("compaction-") && active;
    });
    const summary = await wholeEditorText();
    if (!summary.includes("E2E-SUMMARY")) throw new Error(`summary document: ${summary.slice(0, 300)}`);
    // The audit the server gives: what was summarised, what stayed, where the cut is.
    for (const part of ["## Summarised", "## Kept verbatim", "- Cut at ", "- Summary by: model"]) {
      if (!summary.includes(part)) throw new Error(`audit document lacks ${part}: ${summary.slice(0, 600)}`);
    }
    await wb.screenshot("compaction-audit");
    await wb.treeRowAction("Compactions", "Compacted", "Undo This Step");
    const undone = await wb.until("the undo said and marked", async () => {
      const said = (await wb.notifications()).find((n) => n.includes("Memento: undone; context"));
      const marked = (await wb.treeRows("Compactions")).find((r) => /^Compacted .*undone/.test(r));
      return said && marked && { said, marked };
    });
    return { rows, title, undone };
  });

  console.log("blocked non-loopback requests:", JSON.stringify(wb.blocked));
} finally {
  await walk.close();
}
walk.report();
