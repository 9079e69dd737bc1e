import { describe, expect, it } from "vitest";
import { mcpNodes, trustQuestion } from "../src/mcpModel";
import type { McpServerItem } from "../src/protocol";

const TIME: McpServerItem = {
  name: "time", source: "memento", repository: false, trusted: true, state: "running",
  target: "mcp-server-time", digest: "d1", definition: '{"command": "mcp-server-time"}',
  tools: [
    { name: "get_current_time", modelName: "mcp__time__get_current_time", policy: "allow" },
    { name: "convert_time", modelName: "mcp__time__convert_time", policy: "deny" },
  ],
  prompts: [{ name: "standup", command: "/mcp__time__standup", arguments: ["team", "day?"] }],
};
const REPO: McpServerItem = {
  name: "db", source: "vscode", path: "/w/.vscode/mcp.json", repository: true, trusted: false,
  state: "untrusted", digest: "d2", definition: '{\n  "command": "db-mcp"\n}',
};

describe("the MCP Servers view", () => {
  it("shows each server's state and source, its tools with their policy and its prompts", () => {
    const [time, db, problem] = mcpNodes([TIME, REPO], ["cannot read /w/.cursor/mcp.json"]);
    expect([time.label, time.description, time.icon, time.contextValue]).toEqual([
      "time", "running · Memento settings", "pass-filled", "mcpServer",
    ]);
    expect(time.children?.map((n) => [n.label, n.description])).toEqual([
      ["get_current_time", "allow"], ["convert_time", "deny"], ["/mcp__time__standup", "team day?"],
    ]);
    expect([db.description, db.icon, db.contextValue]).toEqual(["untrusted · .vscode/mcp.json", "shield", "mcpServer.untrusted"]);
    expect(db.tooltip).toContain("Not trusted: it does not start");
    expect([problem.label, problem.icon]).toEqual(["cannot read /w/.cursor/mcp.json", "warning"]);
  });

  it("asks for trust with the definition as written", () => {
    const { message, detail } = trustQuestion(REPO);
    expect(message).toBe('Trust the MCP server "db" defined in /w/.vscode/mcp.json?');
    expect(detail).toContain('"command": "db-mcp"');
  });
});
