// The extension when its server cannot start, as a user meets it (test_vscode_e2e.py starts
// code-server with no `memento` on PATH and no `memento.server.command`): one error that says
// what to set and where, with "Open Settings" (the Remote settings here: code-server runs
// extensions on its own machine), and no restarts of a server that never came up. The user
// then types a program that does not exist into that setting (one error naming it), then the
// real one, MEMENTO_E2E_SERVER (it starts). Prints "N passed, N failed".

import { Walk, Workbench } from "./driver.mjs";

const METER = "memento.memento.contextMeter";
const wb = new Workbench({ url: process.env.MEMENTO_E2E_URL, shots: process.env.MEMENTO_E2E_SHOTS || "shots", timeout: 30000 });
const walk = new Walk(wb);
const step = (name, work) => walk.step(name, work);

/** What the language client says on its own when a server fails or gives up: none of it may
 * reach the user, whose one message comes from Memento. */
const LIBRARY = /crashed|couldn't create connection|initialization failed|Pending response|connection got (closed|disposed)/i;

const messages = async () => (await wb.notifications()).filter((n) => n.includes("Memento") || LIBRARY.test(n));

/** Types `value` into the settings editor's "Memento › Server: Command", as a user does. */
async function setServerCommand(value) {
  const item = wb.page.locator(".settings-editor .setting-item.setting-item-text", { hasText: "Server: Command" }).first();
  const input = item.locator("input").first();
  await input.fill(value);
  await input.press("Enter");
}

try {
  await step("without memento on PATH: one error saying so and naming the setting", async () => {
    await wb.open();
    const note = await wb.until("the error", async () => (await messages()).find((n) => n.includes("not on the PATH")));
    const toast = wb.page.locator(".notifications-toasts .notification-toast", { hasText: "not on the PATH" }).first();
    const actions = (await toast.locator(".monaco-button").allInnerTexts()).map((t) => t.trim());
    const meter = await wb.statusBarItem(METER);
    if (!note.includes('Set "memento.server.command" in the Remote settings') || !actions.includes("Open Settings") || meter !== "Memento") {
      throw new Error(JSON.stringify({ note, actions, meter }));
    }
    return { note, actions, meter };
  });

  await step("Open Settings shows that setting where it is read (the Remote tab)", async () => {
    const toast = wb.page.locator(".notifications-toasts .notification-toast", { hasText: "not on the PATH" }).first();
    await toast.locator(".monaco-button", { hasText: "Open Settings" }).click();
    const tab = await wb.until("the settings editor's Remote tab", async () => {
      const selected = wb.page.locator(".settings-editor .settings-tabs-widget .action-label[aria-selected=true]");
      return (await selected.count()) > 0 && (await selected.first().innerText()).trim();
    });
    const item = wb.page.locator(".settings-editor .setting-item.setting-item-text", { hasText: "Server: Command" }).first();
    await item.waitFor();
    if (!tab.startsWith("Remote")) throw new Error(`the settings editor opened on ${tab}`);
    return { tab };
  });

  await step("a program that does not exist: one error naming it", async () => {
    const missing = "/nonexistent/memento";
    await setServerCommand(missing);
    const note = await wb.until("the error", async () => (await messages()).find((n) => n.includes("did not start (")));
    if (!note.includes(missing) || !note.includes("memento.server.command")) throw new Error(note);
    return { note };
  });

  await step("the real server: it starts, and the only message left is the one above", async () => {
    await setServerCommand(process.env.MEMENTO_E2E_SERVER);
    const meter = await wb.until("the context meter of a running server", async () => {
      const text = await wb.statusBarItem(METER);
      return text && /\/100k · /.test(text) && text; // the window of the provider in the user settings
    }, 120000);
    // A restart loop after the first start would have left "crashed 5 times" by now, and each
    // failed start the client's own errors: only the previous step's message may be left.
    const left = await messages();
    if (left.length !== 1 || !left[0].includes("/nonexistent/memento")) throw new Error(`messages: ${JSON.stringify(left)}`);
    return { meter, left };
  });
} finally {
  await walk.close();
}
walk.report();
