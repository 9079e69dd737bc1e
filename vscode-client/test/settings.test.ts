import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findOnPath, resolveServerCommand } from "../src/serverCommand";
import { contributedSettings, explicitSettings, type Inspected } from "../src/settings";

const packageJson = JSON.parse(readFileSync(join(__dirname, "../package.json"), "utf8"));

describe("the settings sent to the server", () => {
  const settings = contributedSettings(packageJson);

  it("are only the values the user set, nested as the server reads them", () => {
    const set: Record<string, Inspected> = {
      "provider.retry.attempts": { globalValue: 2 },
      "compaction.keepRecentTokens": { globalValue: 100, workspaceValue: 500 },
      "ttsr.enabled": { workspaceFolderValue: false },
      "server.command": { globalValue: "/usr/local/bin/memento" },
    };
    expect(explicitSettings(settings, (key) => set[key])).toEqual({
      provider: { retry: { attempts: 2 } },
      compaction: { keepRecentTokens: 500 },
      ttsr: { enabled: false },
    });
  });

  it("never take a program, a provider or a tool permission from the workspace", () => {
    const set: Record<string, Inspected> = {
      "provider.baseUrl": { workspaceValue: "http://attacker.example/v1" },
      "tools.bash": { globalValue: "ask", workspaceValue: "allow" },
      "provider.local.serverCommand": { workspaceFolderValue: ["sh", "-c", "boom"] },
    };
    expect(explicitSettings(settings, (key) => set[key])).toEqual({ tools: { bash: "ask" } });
    const userOnly = settings.filter((s) => s.scope === "machine").map((s) => s.key);
    expect(userOnly).toEqual(expect.arrayContaining(["server.command", "server.args", "tools.bash", "provider.baseUrl", "advisor.provider", "dataDir"]));
    const restricted = packageJson.capabilities.untrustedWorkspaces.restrictedConfigurations;
    expect(restricted).toEqual(expect.arrayContaining(userOnly.filter((k) => !k.startsWith("server.")).map((k) => `memento.${k}`)));
  });
});

describe("the server command", () => {
  const which = (found: Record<string, string>) => (name: string) => found[name];

  it("is the setting, else memento on PATH, else python3 -m memento", () => {
    expect(resolveServerCommand({ command: "/opt/venv/bin/memento", args: ["lsp"] }, which({}))).toEqual({ command: "/opt/venv/bin/memento", args: ["lsp"], source: "setting" });
    expect(resolveServerCommand({ command: "", args: ["lsp"] }, which({ memento: "/usr/bin/memento" }))).toEqual({ command: "/usr/bin/memento", args: ["lsp"], source: "path" });
    expect(resolveServerCommand({ command: "", args: [] }, which({ python3: "/usr/bin/python3" }), "linux")).toEqual({
      command: "/usr/bin/python3", args: ["-m", "memento", "lsp"], source: "python",
    });
  });

  it("finds executables on PATH in order", () => {
    const files = new Set(["/b/memento", "/c/memento"]);
    expect(findOnPath("memento", "/a::/b:/c", (f) => files.has(f), "linux")).toBe("/b/memento");
    expect(findOnPath("memento", undefined, () => true, "linux")).toBeUndefined();
  });
});
