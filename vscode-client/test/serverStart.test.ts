import { describe, expect, it } from "vitest";
import { resolveServerCommand } from "../src/serverCommand";
import { RestartPolicy, startFailure } from "../src/serverStart";

const which = (found: Record<string, string>) => (name: string) => found[name];
/** What vscode-jsonrpc rejects `initialize` with when the server process exits first. */
const exited = { message: "Pending response rejected since connection got disposed", code: -32097 };

describe("a server that does not start", () => {
  it("without memento on PATH: says so and names the setting to set", () => {
    const guess = resolveServerCommand({ command: "", args: ["lsp"] }, which({ python3: "/usr/bin/python3" }), "linux");
    const message = startFailure(guess, exited);
    expect(message).toContain("`memento` is not on the PATH");
    expect(message).toContain("`/usr/bin/python3 -m memento lsp` did not start: it exited before it answered");
    expect(message).toContain('Set "memento.server.command" in your user settings');
    expect(message).not.toContain("Pending response"); // the library's words mean nothing to a user
  });

  it("with a configured program: names it, the reason and the setting", () => {
    const configured = resolveServerCommand({ command: "/opt/no-such-program", args: ["lsp"] }, which({}));
    const message = startFailure(configured, { message: "spawn /opt/no-such-program ENOENT" });
    expect(message).toBe(
      'Memento: the language server did not start (/opt/no-such-program lsp): spawn /opt/no-such-program ENOENT. Set "memento.server.command" in your user settings to the program that runs `memento lsp`.',
    );
  });

  it("the bundled server: names it and the way to run another", () => {
    const bundled = { command: "/ext/bundled/server/memento", args: ["lsp"], source: "bundled" as const };
    const message = startFailure(bundled, { message: "spawn /ext/bundled/server/memento EACCES" });
    expect(message).toContain("the server bundled with the extension did not start (/ext/bundled/server/memento lsp): spawn");
    expect(message).toContain('set "memento.server.importStrategy" to "fromEnvironment" in your user settings');
  });

  it("in a remote window (code-server, Remote): names the Remote settings, where the setting is read", () => {
    const guess = resolveServerCommand({ command: "", args: ["lsp"] }, which({}), "linux");
    expect(startFailure(guess, exited, true)).toContain('Set "memento.server.command" in the Remote settings');
  });
});

describe("restarts after the connection closed", () => {
  it("never restart a server that did not come up, and say nothing more (its start failed once, loudly)", () => {
    const policy = new RestartPolicy(() => 0);
    for (let i = 0; i < 10; i++) expect(policy.closed(false)).toEqual({ restart: false });
  });

  it("restart a server that ran, up to four times in three minutes, then stop with one message", () => {
    let now = 0;
    const policy = new RestartPolicy(() => now);
    for (let i = 0; i < 4; i++) {
      now += 1000;
      expect(policy.closed(true)).toEqual({ restart: true });
    }
    now += 1000;
    const gave = policy.closed(true);
    expect(gave.restart).toBe(false);
    expect(gave.restart === false && gave.message).toContain("stopped 5 times in 3 minutes");
  });

  it("forget crashes older than the window", () => {
    let now = 0;
    const policy = new RestartPolicy(() => now);
    for (let i = 0; i < 4; i++) expect(policy.closed(true)).toEqual({ restart: true });
    now = 3 * 60_000 + 1;
    expect(policy.closed(true)).toEqual({ restart: true });
  });
});
