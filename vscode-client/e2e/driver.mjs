// A small driver for the real VS Code workbench that code-server serves, from Debian's
// headless chromium through playwright-core (no browser download). Every wait is bounded.
// The browser may only reach loopback: other host names do not resolve, other requests are
// aborted (`blocked` lists them).

import fs from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);
const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const text = (s) => (s ?? "").replace(/\u00a0/g, " ").replace(/\s+/g, " ").trim();

export class Workbench {
  constructor({ url, shots, timeout = 60000, executablePath = process.env.CHROMIUM_PATH || "/usr/bin/chromium" }) {
    Object.assign(this, { url, shots, timeout, executablePath });
    this.shotCount = 0;
    this.blocked = [];
    this.consoleErrors = [];
  }

  async open() {
    const started = Date.now();
    this.browser = await chromium.launch({
      executablePath: this.executablePath,
      headless: true,
      timeout: this.timeout,
      args: [
        "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
      ],
    });
    const context = await this.browser.newContext({ viewport: { width: 1400, height: 900 } });
    await context.route(
      (u) => { try { const x = new URL(u); return /^(https?|wss?):$/.test(x.protocol) && !LOOPBACK.has(x.hostname); } catch { return false; } },
      (route) => { this.blocked.push(route.request().url()); return route.abort("blockedbyclient"); },
    );
    this.page = await context.newPage();
    this.page.setDefaultTimeout(this.timeout);
    this.page.on("pageerror", (e) => this.consoleErrors.push(String(e)));
    await this.page.goto(this.url, { waitUntil: "domcontentloaded" });
    await this.page.locator(".monaco-workbench .part.statusbar").waitFor({ state: "visible" });
    await this.page.waitForFunction(() => performance.getEntriesByName("code/didLoadExtensions").length > 0);
    return Date.now() - started;
  }

  async close() {
    await this.browser?.close().catch(() => {});
  }

  async screenshot(name) {
    fs.mkdirSync(this.shots, { recursive: true });
    const file = path.join(this.shots, `${String(++this.shotCount).padStart(2, "0")}-${name}.png`);
    await this.page.screenshot({ path: file });
    return file;
  }

  /** Poll `probe` until it returns a truthy value (bounded); throws with `what` and the last value. */
  async until(what, probe, timeout = this.timeout) {
    const deadline = Date.now() + timeout;
    let last;
    while (Date.now() < deadline) {
      last = await probe().catch((e) => `(${e.message})`);
      if (last && !(typeof last === "string" && last.startsWith("("))) return last;
      await this.page.waitForTimeout(200);
    }
    throw new Error(`${what}: not within ${timeout} ms (last: ${JSON.stringify(last)})`);
  }

  // -- quick input: the command palette, input boxes, quick picks ------------------------
  get quickInput() {
    return this.page.locator(".quick-input-widget");
  }

  async escapeQuickInput() {
    if (await this.quickInput.isVisible().catch(() => false)) {
      await this.page.keyboard.press("Escape");
      await this.quickInput.waitFor({ state: "hidden", timeout: 5000 }).catch(() => {});
    }
  }

  /** Close whatever modal, picker or widget is open. */
  async dismissAll() {
    for (let i = 0; i < 3; i++) await this.page.keyboard.press("Escape");
    await this.page.locator(".monaco-dialog-box").waitFor({ state: "hidden", timeout: 5000 }).catch(() => {});
    await this.escapeQuickInput();
  }

  /** Open the palette (or quick open) and type `value`. Something else may take the focus
   * as the palette opens (a view that finishes loading beside it), which closes it: then it
   * is opened again. */
  async openQuickInput(value) {
    const input = this.page.locator(".quick-input-widget .quick-input-box input");
    for (let attempt = 0; attempt < 4; attempt++) {
      await this.escapeQuickInput();
      await this.page.keyboard.press(attempt % 2 === 1 ? "Control+Shift+P" : "F1");
      if (await input.waitFor({ state: "visible", timeout: 5000 }).then(() => true, () => false)) {
        if (await input.fill(value, { timeout: 5000 }).then(() => true, () => false)) return input;
        continue;
      }
      await this.page.locator(".part.editor").first().click({ position: { x: 5, y: 5 } }).catch(() => {});
    }
    throw new Error(`the quick input did not stay open to take ${JSON.stringify(value)}`);
  }

  rows() {
    return this.page.locator(".quick-input-widget .quick-input-list .monaco-list-row");
  }

  /** Click the quick pick row whose label matches (a picker a command opens may show a
   * moment after the palette closed). */
  async pickRow(label) {
    const row = this.rows().filter({ has: this.page.locator(".label-name", { hasText: label }) }).first();
    try {
      await row.waitFor({ state: "visible" });
    } catch {
      const seen = await this.rows().evaluateAll((rs) => rs.map((r) => r.getAttribute("aria-label")));
      throw new Error(`no quick pick row ${label}; saw ${JSON.stringify(seen)}`);
    }
    await row.click();
  }

  /** Click the row of the palette just typed into; false when the palette closed first. */
  async pickRowIfOpen(label) {
    const row = this.rows().filter({ has: this.page.locator(".label-name", { hasText: label }) }).first();
    const seen = await Promise.race([
      row.waitFor({ state: "visible" }).then(() => "row", () => "none"),
      this.quickInput.waitFor({ state: "hidden" }).then(() => "closed", () => "none"),
    ]);
    if (seen === "closed") return false;
    if (seen !== "row") {
      const rows = await this.rows().evaluateAll((rs) => rs.map((r) => r.getAttribute("aria-label")));
      throw new Error(`no quick pick row ${label}; saw ${JSON.stringify(rows)}`);
    }
    await row.click();
    return true;
  }

  /** Type into the palette or quick open and pick the row `label`, opening it again when it
   * closed before the pick. */
  async quickPick(value, label) {
    for (let attempt = 0; attempt < 3; attempt++) {
      await this.openQuickInput(value);
      if (await this.pickRowIfOpen(label)) return;
    }
    throw new Error(`the quick input closed before ${label} could be picked, three times`);
  }

  /** Run a command by its exact palette title. */
  async runCommand(title) {
    await this.quickPick(">" + title, new RegExp(`^\\s*${escapeRe(title)}\\s*$`));
  }

  /** Type into the input box that is open (showInputBox) and press Enter. */
  async answerInput(value) {
    const input = this.page.locator(".quick-input-widget .quick-input-box input");
    await input.waitFor({ state: "visible" });
    await input.fill(value);
    await input.press("Enter");
    await this.quickInput.waitFor({ state: "hidden" }).catch(() => {});
  }

  async openFile(name) {
    await this.quickPick(name, new RegExp(`^\\s*${escapeRe(name)}\\s*$`));
    await this.page.locator(`.tabs-container .tab.active[aria-label^=${JSON.stringify(name)}]`).first().waitFor();
    await this.until(`${name}'s text rendered`, async () => (await this.editorText()).length > 0);
  }

  // -- dialogs, notifications, status bar ----------------------------------------------------
  async dialog() {
    const box = this.page.locator(".monaco-dialog-box");
    await box.waitFor({ state: "visible" });
    return {
      message: text(await box.locator(".dialog-message-text").innerText()),
      detail: text(await box.locator(".dialog-message-detail").innerText().catch(() => "")),
      buttons: (await box.locator(".dialog-buttons .monaco-button").allInnerTexts()).map(text),
    };
  }

  async clickDialogButton(title) {
    const box = this.page.locator(".monaco-dialog-box");
    await box.locator(".dialog-buttons .monaco-button", { hasText: new RegExp(`^\\s*${escapeRe(title)}\\s*$`) }).click();
    await box.waitFor({ state: "hidden" });
  }

  async notifications() {
    return (await this.page.locator(".notifications-toasts .notification-list-item-message").allInnerTexts()).map(text);
  }

  async statusBarItem(id) {
    const item = this.page.locator(`.part.statusbar [id=${JSON.stringify(id)}]`);
    return (await item.count()) ? text(await item.innerText()) : null;
  }

  // -- views, trees, editors -------------------------------------------------------------
  async openContainer(id) {
    const link = this.page.locator(`.part.activitybar a.action-label[class*=${JSON.stringify(`activity-workbench-view-extension-${id}-`)}]`).first();
    const li = link.locator("xpath=..");
    if ((await li.getAttribute("aria-selected")) !== "true") await link.click();
    await this.page.locator(".part.sidebar").waitFor({ state: "visible" });
  }

  /** The rows of a tree view in the side bar, by the view's name. */
  async treeRows(viewName) {
    const pane = this.page.locator(".part.sidebar .pane").filter({
      has: this.page.locator(`.pane-header[aria-label=${JSON.stringify(`${viewName} Section`)}]`),
    });
    const header = pane.locator(".pane-header").first();
    if ((await header.getAttribute("aria-expanded")) === "false") await header.click();
    return (await pane.locator(".pane-body .monaco-list-row").allInnerTexts()).map(text);
  }

  async clickTreeRow(viewName, label) {
    const pane = this.page.locator(".part.sidebar .pane").filter({
      has: this.page.locator(`.pane-header[aria-label=${JSON.stringify(`${viewName} Section`)}]`),
    });
    const rows = pane.locator(".pane-body .monaco-list-row");
    const row = label instanceof RegExp
      ? rows.filter({ has: this.page.locator(".label-name", { hasText: label }) }).first()
      : rows.filter({ hasText: label }).first();
    await row.click();
  }

  /** Right-click a tree row and choose `action` from its context menu. */
  async treeRowAction(viewName, label, action) {
    const pane = this.page.locator(".part.sidebar .pane").filter({
      has: this.page.locator(`.pane-header[aria-label=${JSON.stringify(`${viewName} Section`)}]`),
    });
    await pane.locator(".pane-body .monaco-list-row").filter({ hasText: label }).first().click({ button: "right" });
    const item = this.page.locator(".monaco-menu .action-item").filter({ hasText: action }).first();
    await item.waitFor({ state: "visible", timeout: this.timeout });
    // The menu takes no click right after it opens (a right button's release must not pick
    // an item): point at the item, which focuses it, and take it with Enter.
    await item.hover();
    await this.page.keyboard.press("Enter");
    await item.waitFor({ state: "hidden", timeout: this.timeout });
  }

  /** The document of the webview whose page has `selector` (a webview sits in two nested
   * iframes of the workbench: the host frame VS Code makes, and the page's own inside it). */
  async webview(selector) {
    return this.until(`a webview with ${selector}`, async () => {
      for (const frame of this.page.frames()) {
        if (frame.isDetached()) continue;
        if (await frame.locator(selector).count().catch(() => 0)) return frame;
      }
      return false;
    });
  }

  async editorText() {
    return text(await this.page.locator(".part.editor .editor-instance .monaco-editor .view-lines").first().innerText());
  }

  /** The two sides of the diff editor in front. */
  async diffSides() {
    const diff = this.page.locator(".part.editor .monaco-diff-editor").first();
    const side = async (which) => text(await diff.locator(`.editor.${which} .view-lines`).first().innerText());
    return { original: await side("original"), modified: await side("modified") };
  }

  async activeEditorTitle() {
    return text(await this.page.locator(".part.editor .tabs-container .tab.active").first().innerText());
  }

  async problems() {
    const item = this.page.locator(".part.statusbar [id='status.problems']");
    const panel = this.page.locator(".markers-panel");
    if (!(await panel.isVisible().catch(() => false))) await item.click();
    await panel.waitFor({ state: "visible" });
    return (await panel.locator(".monaco-list-row").evaluateAll((rows) => rows.map((r) => r.getAttribute("aria-label") || r.innerText)))
      .map(text);
  }

  /** The quick fixes offered on `line` (1-based) of the active editor. */
  async quickFixes(line) {
    const lines = this.page.locator(".part.editor .editor-instance .monaco-editor .view-lines .view-line");
    await lines.nth(line - 1).click({ position: { x: 2, y: 5 } });
    await this.page.keyboard.press("Control+.");
    const widget = this.page.locator(".action-widget");
    await widget.waitFor({ state: "visible" });
    return (await widget.locator(".monaco-list-row").allInnerTexts()).map(text).filter(Boolean);
  }
}

/** A walk of named steps over one workbench: a PASS/FAIL line and a screenshot per step (a
 * failed step leaves no dialog open for the next), a time limit, and "N passed, N failed". */
export class Walk {
  passed = 0;
  failed = 0;

  constructor(wb, limitMs = 300000) {
    this.wb = wb;
    this.overall = setTimeout(() => {
      console.log(`FAIL the walk did not finish within ${limitMs / 60000} minutes`);
      process.exit(3);
    }, limitMs);
  }

  async step(name, work) {
    const started = Date.now();
    const shot = name.replace(/[^\w]+/g, "-").toLowerCase();
    try {
      const value = await work();
      this.passed++;
      console.log(`PASS ${name} (${Date.now() - started} ms)${value === undefined ? "" : `: ${JSON.stringify(value)}`}`);
    } catch (error) {
      this.failed++;
      console.log(`FAIL ${name}: ${error.message}`);
      await this.wb.screenshot(`failed-${shot}`).catch(() => {});
      await this.wb.dismissAll().catch(() => {}); // a dialog or picker left open would block the next steps
      return;
    }
    await this.wb.screenshot(shot).catch(() => {});
  }

  /** Closes the workbench; call it in `finally`, then `report()`. */
  async close() {
    await this.wb.close();
    clearTimeout(this.overall);
  }

  report() {
    console.log(`${this.passed} passed, ${this.failed} failed`);
    process.exit(this.failed ? 1 : 0);
  }
}
