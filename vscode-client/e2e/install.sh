#!/usr/bin/env bash
# Installs what the real-VS-Code test needs, all of it under vscode-client/e2e/.harness/
# (ignored by git): code-server (the VS Code workbench and extension host, from the npm
# registry), built from source where its install scripts would download binaries, and
# Debian's chromium, ripgrep and build tools through apt when they are missing.
# Idempotent: a second run checks and returns in about a second.
#
#   vscode-client/e2e/install.sh            install (or check) everything
#   CODE_SERVER_VERSION=4.100.3             the code-server release (VS Code 1.100.3)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HOME_DIR="${MEMENTO_E2E_HOME:-$HERE/.harness}"
VERSION="${CODE_SERVER_VERSION:-4.100.3}"
CS_DIR="$HOME_DIR/code-server"
CS_PKG="$CS_DIR/node_modules/code-server"
VSCODE_DIR="$CS_PKG/lib/vscode"
MARKER="$CS_DIR/.installed-$VERSION"
LOGS="$HOME_DIR/logs"
APT_PACKAGES=(build-essential python3 pkg-config libkrb5-dev libsecret-1-dev libxkbfile-dev libx11-dev
  ripgrep chromium fonts-dejavu-core)

say() { printf '[e2e-install %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
fail() { say "ERROR: $*"; exit 1; }
quiet() { # quiet LOG CMD...: run CMD with its output in LOG; show the tail when it fails
  local log="$1"; shift
  "$@" >>"$log" 2>&1 || { tail -30 "$log" >&2; fail "failed: $* (log: $log)"; }
}

mkdir -p "$LOGS"

install_apt() {
  local missing=()
  for package in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
  done
  ((${#missing[@]})) || return 0
  say "apt-get install ${missing[*]}"
  quiet "$LOGS/apt.log" timeout 600 apt-get update -qq
  DEBIAN_FRONTEND=noninteractive quiet "$LOGS/apt.log" timeout 1200 \
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

natives_load() {
  (cd "$VSCODE_DIR" && timeout 60 node -e '
    for (const m of ["@vscode/spdlog", "node-pty", "native-watchdog", "kerberos", "@parcel/watcher", "@vscode/deviceid"])
      require(require.resolve(m, { paths: [process.cwd()] }));
    require("child_process").execFileSync(require("@vscode/ripgrep").rgPath, ["--version"]);') \
  && (cd "$CS_DIR" && timeout 60 node -e 'require("argon2")')
}

install_code_server() {
  if [[ -f "$MARKER" ]] && natives_load >/dev/null 2>&1; then
    return 0
  fi
  rm -rf "$CS_DIR"
  mkdir -p "$CS_DIR"
  echo '{"name": "memento-e2e-code-server", "private": true}' >"$CS_DIR/package.json"
  say "npm pack code-server@$VERSION"
  local tarball
  tarball="$(cd "$CS_DIR" && timeout 600 npm pack --silent "code-server@$VERSION" | tail -1)"
  # Its postinstall refuses to run as root and then downloads ripgrep: do its steps by hand.
  say "npm install code-server (install scripts off)"
  quiet "$LOGS/npm.log" bash -c "cd '$CS_DIR' && timeout 900 npm install --ignore-scripts --no-audit --no-fund --loglevel=error './$tarball'"
  rm -f "$CS_DIR/$tarball"
  # argon2's prebuilt download fails here; node-pre-gyp then builds it from source.
  say "build argon2 from source"
  quiet "$LOGS/npm.log" bash -c "cd '$CS_DIR' && timeout 900 npm rebuild --loglevel=error argon2"
  say "npm install lib/vscode (install scripts off)"
  quiet "$LOGS/npm.log" bash -c "cd '$VSCODE_DIR' && timeout 900 npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error"
  # Native modules from source (node-gyp); node-pty's post-install runs `npx node-gyp`.
  say "build VS Code's native modules"
  quiet "$LOGS/npm.log" bash -c "cd '$VSCODE_DIR' && npm_config_yes=true timeout 1200 npm rebuild --loglevel=error \
    @parcel/watcher @vscode/deviceid @vscode/spdlog @vscode/windows-process-tree @vscode/windows-registry \
    kerberos native-watchdog node-pty"
  # @vscode/ripgrep's own postinstall downloads rg: Debian's ripgrep takes its place.
  mkdir -p "$VSCODE_DIR/node_modules/@vscode/ripgrep/bin"
  install -m 0755 "$(command -v rg)" "$VSCODE_DIR/node_modules/@vscode/ripgrep/bin/rg"
  # The links code-server's postinstall.sh makes.
  (cd "$VSCODE_DIR" && rm -rf node_modules.asar && ln -s node_modules node_modules.asar)
  (cd "$VSCODE_DIR/bin/remote-cli" && ln -sfn code-linux.sh code-server)
  (cd "$VSCODE_DIR/bin/helpers" && ln -sfn browser-linux.sh browser.sh)
  say "npm install lib/vscode/extensions (the built-in extensions' typescript)"
  quiet "$LOGS/npm.log" bash -c "cd '$VSCODE_DIR/extensions' && timeout 600 npm install --omit=dev --no-audit --no-fund --loglevel=error"
  natives_load || fail "code-server's native modules do not load (see $LOGS/npm.log)"
  touch "$MARKER"
}

started=$(date +%s)
install_apt
install_code_server
say "ready in $(( $(date +%s) - started )) s: $(du -sh "$CS_DIR" | cut -f1) in $CS_DIR"
echo "CODE_SERVER_ENTRY=$CS_PKG/out/node/entry.js"
