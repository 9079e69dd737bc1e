// Which program starts the language server: `memento.server.command` (with
// `memento.server.args`), else `memento` on PATH, else `python3 -m memento`.

import * as path from "node:path";

export interface ServerCommand {
  command: string;
  args: string[];
  /** Where it came from: the user's setting, `memento` on PATH, or the `python3 -m` guess. */
  source: "setting" | "path" | "python";
}

export interface CommandSetting {
  command: string;
  args: string[];
}

export function findOnPath(
  name: string,
  pathVariable: string | undefined,
  isExecutable: (file: string) => boolean,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const separator = platform === "win32" ? ";" : ":";
  const suffixes = platform === "win32" ? [".exe", ".cmd", ".bat", ""] : [""];
  for (const dir of (pathVariable ?? "").split(separator)) {
    if (!dir) continue;
    for (const suffix of suffixes) {
      const candidate = path.join(dir, name + suffix);
      if (isExecutable(candidate)) return candidate;
    }
  }
  return undefined;
}

export function resolveServerCommand(
  setting: CommandSetting,
  which: (name: string) => string | undefined,
  platform: NodeJS.Platform = process.platform,
): ServerCommand {
  const args = setting.args.length ? setting.args : ["lsp"];
  const configured = setting.command.trim();
  if (configured) return { command: configured, args: setting.args, source: "setting" };
  const memento = which("memento");
  if (memento) return { command: memento, args, source: "path" };
  const python = platform === "win32" ? "python" : "python3";
  return { command: which(python) ?? python, args: ["-m", "memento", ...args], source: "python" };
}

export function describe(command: ServerCommand): string {
  return [command.command, ...command.args].map((part) => (/\s/.test(part) ? JSON.stringify(part) : part)).join(" ");
}
