// The extension when its server cannot start (test_vscode_e2e.py points memento.server.command
// at a program that does not exist): a clear error with "Open Settings", and the meter says
// Memento is not running. Prints "N passed, N failed".

import { Workbench } from "./driver.mjs";

const wb = new Workbench({ url: process.env.MEMENTO_E2E_URL, shots: process.env.MEMENTO_E2E_SHOTS || "shots", timeout: 30000 });
let failed = 0;
try {
  await wb.open();
  const note = await wb.until("the error", async () => (await wb.notifications()).find((n) => n.includes("did not start")));
  const toast = wb.page.locator(".notifications-toasts .notification-toast", { hasText: "did not start" }).first();
  const actions = (await toast.locator(".monaco-button").allInnerTexts()).map((t) => t.trim());
  const meter = await wb.statusBarItem("memento.memento.contextMeter");
  await wb.screenshot("server-did-not-start");
  const ok = note.includes("memento.server.command") && actions.includes("Open Settings") && meter === "Memento";
  console.log(`${ok ? "PASS" : "FAIL"} the server did not start: ${JSON.stringify({ note, actions, meter })}`);
  if (ok) {
    await toast.locator(".monaco-button", { hasText: "Open Settings" }).click();
    const search = await wb.until("the settings editor on memento.server", async () => {
      const value = await wb.page.locator(".settings-editor .suggest-input-container textarea, .settings-editor .search-container textarea").first().inputValue();
      return value.includes("memento.server") && value;
    });
    await wb.screenshot("open-settings");
    console.log(`PASS Open Settings searches ${JSON.stringify(search)}`);
  } else failed++;
} catch (error) {
  failed++;
  console.log(`FAIL ${error.message}`);
} finally {
  await wb.close();
}
console.log(`${failed ? 0 : 2} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
