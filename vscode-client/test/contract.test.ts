// The names both sides share: protocolNames.ts against the server's protocol.py, and the
// extension's own commands against the server's (a clash would fail the extension's start).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import * as names from "../src/protocolNames";

const read = (relative: string) => readFileSync(join(__dirname, relative), "utf8");
const serverNames = Object.fromEntries(
  [...read("../../server/memento/lsp/protocol.py").matchAll(/^([A-Z][A-Z_]*) = "([^"]+)"$/gm)].map((m) => [m[1], m[2]]),
);
const packageJson = JSON.parse(read("../package.json"));
const contributed: string[] = packageJson.contributes.commands.map((c: { command: string }) => c.command);

describe("the shared names", () => {
  it("are the server's protocol constants, name for name", () => {
    expect(Object.keys(serverNames).length).toBeGreaterThan(20);
    expect({ ...names }).toEqual(serverNames);
  });

  it("leave the server's commands to the language client", () => {
    const serverCommands = Object.entries(serverNames).filter(([k]) => k.startsWith("CMD_")).map(([, v]) => v);
    expect(contributed.filter((c) => serverCommands.includes(c))).toEqual([]);
  });

  it("give every palette command a handler", () => {
    const source = read("../src/extension.ts");
    const registered = [...source.matchAll(/register\("([\w.]+)"/g)].map((m) => m[1]);
    expect([...registered].sort()).toEqual([...contributed].sort());
  });
});
