// The platform package: the extension as `npm run package` built it, plus the self-contained
// server (packaging/freeze.py's one-folder build) under bundled/server, packaged with
// `vsce package --target <platform>` as memento-<platform>.vsix. The server is taken from
// MEMENTO_FROZEN when set, else from build/frozen/<platform>/memento, and frozen first (with
// MEMENTO_PYTHON, default python3, which needs `pip install '.[freeze]'`) when it is not there.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

const MACHINES = { x64: "x64", arm64: "arm64" };
const target = `${process.platform}-${MACHINES[process.arch] ?? process.arch}`;
const client = resolve(import.meta.dirname, "..");
const root = resolve(client, "..");
const frozen = process.env.MEMENTO_FROZEN ?? join(root, "build", "frozen", target, "memento");
const program = join(frozen, process.platform === "win32" ? "memento.exe" : "memento");

if (!existsSync(program)) {
  console.log(`no frozen server at ${frozen}: building it (packaging/freeze.py)`);
  execFileSync(process.env.MEMENTO_PYTHON ?? "python3", [join(root, "packaging", "freeze.py")], { cwd: root, stdio: "inherit" });
}
const bundled = join(client, "bundled", "server");
rmSync(bundled, { recursive: true, force: true });
cpSync(frozen, bundled, { recursive: true, verbatimSymlinks: true });
const out = `memento-${target}.vsix`;
const vsce = join(client, "node_modules", ".bin", "vsce");
execFileSync(
  vsce,
  ["package", "--target", target, "--no-dependencies", "--allow-missing-repository", "--ignoreFile", ".vscodeignore-platform", "--out", out],
  { cwd: client, stdio: "inherit" },
);
console.log(`${out}: ${(statSync(join(client, out)).size / 1e6).toFixed(1)} MB, with the server from ${frozen}`);
