// The MCP Servers view in a real VS Code: the user's server (from the settings) running with
// its tools, a repository's server (.vscode/mcp.json) untrusted until the user reads its
// definition and trusts it, then running. Set up by tests/clients/test_vscode_e2e.py.
// Prints one PASS/FAIL line per step and "N passed, N failed"; a screenshot per step.
//
// Environment: MEMENTO_E2E_URL (the workbench), MEMENTO_E2E_SHOTS (screenshot folder).

import { Walk, Workbench } from "./driver.mjs";

const VIEW = "MCP Servers";
const wb = new Workbench({ url: process.env.MEMENTO_E2E_URL, shots: process.env.MEMENTO_E2E_SHOTS || "shots", timeout: 60000 });
const walk = new Walk(wb);
const step = (name, work) => walk.step(name, work);

async function rows() {
  return wb.treeRows(VIEW);
}

try {
  await step("workbench loads with Memento", async () => {
    const ms = await wb.open();
    await wb.until("the context meter", () => wb.statusBarItem("memento.memento.contextMeter"), 120000);
    return { loadedMs: ms };
  });

  await step("the MCP Servers view lists both servers, the repository's untrusted", async () => {
    await wb.openContainer("memento");
    await wb.runCommand("Memento: Start and Refresh MCP Servers");
    return wb.until("both servers in the view", async () => {
      const found = await rows();
      const clock = found.some((r) => /^clock\s*running · Memento settings/.test(r));
      const repo = found.some((r) => /^repo-clock\s*untrusted · \.vscode\/mcp\.json/.test(r));
      return clock && repo && found;
    });
  });

  await step("a server's tools show with their policy", async () => {
    await wb.clickTreeRow(VIEW, /^clock$/);
    return wb.until("the tools under clock", async () => {
      const found = await rows();
      return found.some((r) => /^get_current_time\s*allow/.test(r)) && found.some((r) => /^convert_time\s*deny/.test(r)) && found;
    });
  });

  await step("trusting the repository's server shows its definition, then it starts", async () => {
    const pane = wb.page.locator(".part.sidebar .pane").filter({
      has: wb.page.locator(`.pane-header[aria-label=${JSON.stringify(`${VIEW} Section`)}]`),
    });
    const row = pane.locator(".pane-body .monaco-list-row").filter({ has: wb.page.locator(".label-name", { hasText: /^repo-clock$/ }) }).first();
    await row.hover();
    await row.locator('.action-label[aria-label="Trust MCP Server…"]').click();
    const question = await wb.dialog();
    if (!question.message.includes('Trust the MCP server "repo-clock"')) throw new Error(`dialog: ${JSON.stringify(question)}`);
    if (!question.detail.includes("mcp-server-time")) throw new Error(`no definition in: ${question.detail}`);
    await wb.screenshot("mcp-trust-question");
    await wb.clickDialogButton("Trust and Start");
    const found = await wb.until("repo-clock running", async () => {
      const now = await rows();
      return now.some((r) => /^repo-clock\s*running · \.vscode\/mcp\.json/.test(r)) && now;
    });
    await wb.screenshot("mcp-servers");
    return { question: question.message, rows: found };
  });

  console.log("blocked non-loopback requests:", JSON.stringify(wb.blocked));
} finally {
  await walk.close();
}
walk.report();
