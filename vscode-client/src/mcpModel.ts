// What the MCP Servers view shows: each server (state, where it is defined, whether the
// repository's definition is trusted), and under it its tools (with their policy) and prompts.
// The server says all of it (`memento/mcp/list`); this only lays it out.

import type { McpServerItem } from "./protocol";

export interface McpNode {
  id: string;
  label: string;
  description?: string;
  tooltip?: string;
  icon: string;
  /** `mcpServer`, `mcpServer.untrusted`, `mcpServer.trusted` (menus), `mcpTool`, `mcpPrompt`, `mcpProblem`. */
  contextValue: string;
  server?: McpServerItem;
  children?: McpNode[];
}

const ICONS: Record<string, string> = {
  running: "pass-filled",
  starting: "loading~spin",
  restarting: "loading~spin",
  failed: "error",
  invalid: "error",
  untrusted: "shield",
  disabled: "circle-slash",
  shadowed: "circle-slash",
  stopped: "debug-stop",
  idle: "circle-outline",
};

const SOURCES: Record<string, string> = {
  memento: "Memento settings",
  "vscode-user": "VS Code user mcp.json",
  "cursor-user": "~/.cursor/mcp.json",
  vscode: ".vscode/mcp.json",
  claude: ".mcp.json",
  cursor: ".cursor/mcp.json",
  "memento-workspace": ".memento/config.toml",
};

export function sourceLabel(source: string): string {
  return SOURCES[source] ?? source;
}

export function serverNode(server: McpServerItem): McpNode {
  const where = sourceLabel(server.source);
  const untrusted = server.repository && !server.trusted;
  const tools = (server.tools ?? []).map<McpNode>((tool) => ({
    id: `mcp:${server.name}:tool:${tool.name}`,
    label: tool.name,
    description: tool.policy,
    tooltip: `${tool.description ?? ""}\nThe model calls it ${tool.modelName}; policy: ${tool.policy}`.trim(),
    icon: tool.policy === "deny" ? "circle-slash" : "tools",
    contextValue: "mcpTool",
  }));
  const prompts = (server.prompts ?? []).map<McpNode>((prompt) => ({
    id: `mcp:${server.name}:prompt:${prompt.name}`,
    label: prompt.command,
    description: (prompt.arguments ?? []).join(" "),
    tooltip: prompt.description,
    icon: "comment",
    contextValue: "mcpPrompt",
  }));
  const lines = [
    `${server.name}: ${server.state}`,
    `Defined in ${server.path ?? where}${server.repository ? " (by the repository)" : ""}`,
    server.target ? `Runs ${server.target}` : "",
    server.error ? `Error: ${server.error}` : "",
    untrusted ? "Not trusted: it does not start and its tools are not offered until you trust this definition." : "",
    server.restarts ? `Restarted ${server.restarts}× after a crash` : "",
  ];
  return {
    id: `mcp:${server.source}:${server.name}`,
    label: server.name,
    description: `${server.state} · ${where}`,
    tooltip: lines.filter(Boolean).join("\n"),
    icon: ICONS[server.state] ?? "circle-outline",
    contextValue: untrusted ? "mcpServer.untrusted" : server.repository ? "mcpServer.trusted" : "mcpServer",
    server,
    children: [...tools, ...prompts],
  };
}

export function mcpNodes(servers: McpServerItem[], problems: string[] = []): McpNode[] {
  return [
    ...servers.map(serverNode),
    ...problems.map<McpNode>((problem, index) => ({
      id: `mcp:problem:${index}`,
      label: problem,
      icon: "warning",
      contextValue: "mcpProblem",
    })),
  ];
}

/** The modal text that asks the user to trust a repository's server: what it runs, as written. */
export function trustQuestion(server: McpServerItem): { message: string; detail: string } {
  return {
    message: `Trust the MCP server "${server.name}" defined in ${server.path ?? sourceLabel(server.source)}?`,
    detail:
      "It is a program (or a URL) chosen by the repository; once trusted it starts, receives what the agent " +
      `sends it, and its tools are offered to the model. Its definition:\n\n${server.definition}`,
  };
}
