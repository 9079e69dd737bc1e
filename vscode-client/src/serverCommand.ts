// Which program starts the language server, as ruff's extension picks its binary:
// `memento.server.command` (with `memento.server.args`) when set; else, with
// `memento.server.importStrategy` = `useBundled` (the default), the server this .vsix carries
// (a platform package's bundled/server); else (`fromEnvironment`, or a universal package that
// carries none) `memento` on PATH, then the bundled one, then `python3 -m memento`. A workspace
// that is not trusted always gets the bundled one when there is one: nothing of the machine's
// environment is picked for it.

import * as path from "node:path";

export type ImportStrategy = "useBundled" | "fromEnvironment";

export interface ServerCommand {
  command: string;
  args: string[];
  /** Where it came from: the bundled build, the user's setting, `memento` on PATH, or the
   * `python3 -m` guess. */
  source: "bundled" | "setting" | "path" | "python";
}

export interface CommandSetting {
  command: string;
  args: string[];
  importStrategy?: ImportStrategy;
}

export interface Environment {
  which: (name: string) => string | undefined;
  /** The bundled server's program, when this package carries one. */
  bundled?: string;
  /** `vscode.workspace.isTrusted`. */
  trusted?: boolean;
}

/** Where a platform package keeps the frozen server (packaging/freeze.py's onedir folder). */
export function bundledProgram(extensionPath: string, platform: NodeJS.Platform = process.platform): string {
  return path.join(extensionPath, "bundled", "server", platform === "win32" ? "memento.exe" : "memento");
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
  env: Environment | ((name: string) => string | undefined),
  platform: NodeJS.Platform = process.platform,
): ServerCommand {
  const { which, bundled, trusted = true } = typeof env === "function" ? { which: env } : env;
  const args = setting.args.length ? setting.args : ["lsp"];
  const strategy = setting.importStrategy ?? "useBundled";
  const fromBundle: ServerCommand | undefined = bundled === undefined ? undefined : { command: bundled, args, source: "bundled" };
  if (fromBundle && !trusted) return fromBundle;
  const configured = setting.command.trim();
  if (configured) return { command: configured, args: setting.args, source: "setting" };
  if (fromBundle && strategy === "useBundled") return fromBundle;
  const memento = which("memento");
  if (memento) return { command: memento, args, source: "path" };
  if (fromBundle) return fromBundle;
  const python = platform === "win32" ? "python" : "python3";
  return { command: which(python) ?? python, args: ["-m", "memento", ...args], source: "python" };
}

export function describe(command: ServerCommand): string {
  return [command.command, ...command.args].map((part) => (/\s/.test(part) ? JSON.stringify(part) : part)).join(" ");
}
