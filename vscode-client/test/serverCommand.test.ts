import { describe, expect, it } from "vitest";
import { bundledProgram, resolveServerCommand } from "../src/serverCommand";
import { mismatch, PROTOCOL_VERSION, serverIdentity } from "../src/serverVersion";

const which = (found: Record<string, string>) => (name: string) => found[name];
const BUNDLED = bundledProgram("/ext", "linux");
const onPath = which({ memento: "/home/u/.local/bin/memento", python3: "/usr/bin/python3" });
const setting = (command = "", importStrategy?: "useBundled" | "fromEnvironment") => ({ command, args: ["lsp"], importStrategy });

describe("which server runs", () => {
  it("the bundled one by default, in a platform package", () => {
    expect(BUNDLED).toBe("/ext/bundled/server/memento");
    expect(resolveServerCommand(setting(), { which: onPath, bundled: BUNDLED })).toEqual({ command: BUNDLED, args: ["lsp"], source: "bundled" });
  });

  it("fromEnvironment: memento on PATH, else the bundled one, else python3 -m memento", () => {
    expect(resolveServerCommand(setting("", "fromEnvironment"), { which: onPath, bundled: BUNDLED }).command).toBe("/home/u/.local/bin/memento");
    expect(resolveServerCommand(setting("", "fromEnvironment"), { which: which({}), bundled: BUNDLED }).source).toBe("bundled");
    expect(resolveServerCommand(setting("", "fromEnvironment"), { which: which({ python3: "/usr/bin/python3" }) }, "linux")).toEqual({
      command: "/usr/bin/python3",
      args: ["-m", "memento", "lsp"],
      source: "python",
    });
  });

  it("a universal package (no bundled server) uses the environment's, as before", () => {
    expect(resolveServerCommand(setting(), { which: onPath }).source).toBe("path");
  });

  it("memento.server.command wins over the strategy", () => {
    expect(resolveServerCommand(setting("/opt/memento"), { which: onPath, bundled: BUNDLED }).command).toBe("/opt/memento");
  });

  it("a workspace that is not trusted always gets the bundled server, whatever the settings say", () => {
    for (const chosen of [setting("/opt/memento"), setting("", "fromEnvironment")]) {
      expect(resolveServerCommand(chosen, { which: onPath, bundled: BUNDLED, trusted: false }).source).toBe("bundled");
    }
    // Without a bundled one there is nothing else to run: the environment's, as before.
    expect(resolveServerCommand(setting(), { which: onPath, trusted: false }).source).toBe("path");
  });
});

describe("a server of another version", () => {
  const initialize = (version: string, protocol?: number) => ({
    serverInfo: { name: "memento", version },
    capabilities: protocol === undefined ? {} : { experimental: { memento: { protocolVersion: protocol } } },
  });
  const fromPath = { command: "/home/u/.local/bin/memento", args: ["lsp"], source: "path" as const };
  const bundled = { command: BUNDLED, args: ["lsp"], source: "bundled" as const };

  it("is fine when the protocol matches, whatever its version number", () => {
    expect(mismatch(serverIdentity(initialize("0.1.1", PROTOCOL_VERSION)), fromPath, "0.1.0", true)).toBeUndefined();
  });

  it("an older server (no protocol version, or a lower one) is named with the upgrade to run", () => {
    const message = mismatch(serverIdentity(initialize("0.0.9")), fromPath, "0.1.0", true);
    expect(message).toContain("is memento 0.0.9 (protocol none), older than this extension (0.1.0)");
    expect(message).toContain("uv tool upgrade memento-lsp");
    expect(message).toContain('set "memento.server.importStrategy" to "useBundled"');
    expect(mismatch(serverIdentity(initialize("0.0.9")), fromPath, "0.1.0", false)).not.toContain("importStrategy");
  });

  it("a newer server asks for the extension's update", () => {
    const message = mismatch(serverIdentity(initialize("0.3.0", PROTOCOL_VERSION + 1)), fromPath, "0.1.0", false);
    expect(message).toContain("newer than this extension");
    expect(message).toContain("Update the extension to 0.3.0");
  });

  it("a bundled server that does not match says the package is broken", () => {
    expect(mismatch(serverIdentity(initialize("9.9.9", 99)), bundled, "0.1.0", true)).toContain("Reinstall the extension");
  });
});
