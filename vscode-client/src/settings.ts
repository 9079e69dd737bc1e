// The settings the extension sends the server: only values the user set, nested as the
// server's settings model reads them (`provider.retry.attempts` → {provider: {retry:
// {attempts}}}), so `.memento/config.toml` and the server's defaults fill the rest.
// Machine- and application-scoped settings (programs, providers, tools, paths: the trust
// boundary) are read from the user's settings only, never from the workspace's.

export interface SettingInfo {
  /** The key under `memento.`, e.g. `provider.model`. */
  key: string;
  scope?: string;
}

export interface Inspected {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** Settings of the extension itself, never sent to the server. */
export const CLIENT_ONLY = ["server.", "trace."];

const USER_ONLY_SCOPES = new Set(["machine", "application"]);

export function isClientOnly(key: string): boolean {
  return CLIENT_ONLY.some((prefix) => key.startsWith(prefix));
}

/** The contributed settings, from the extension's package.json. */
export function contributedSettings(packageJson: unknown): SettingInfo[] {
  const properties = (packageJson as { contributes?: { configuration?: { properties?: Record<string, { scope?: string }> } } })
    .contributes?.configuration?.properties;
  return Object.entries(properties ?? {})
    .filter(([name]) => name.startsWith("memento."))
    .map(([name, spec]) => ({ key: name.slice("memento.".length), scope: spec.scope }));
}

export function effectiveValue(info: SettingInfo, inspected: Inspected | undefined): unknown {
  if (inspected === undefined) return undefined;
  if (info.scope !== undefined && USER_ONLY_SCOPES.has(info.scope)) return inspected.globalValue;
  return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue;
}

export function explicitSettings(
  settings: SettingInfo[],
  inspect: (key: string) => Inspected | undefined,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const info of settings) {
    if (isClientOnly(info.key)) continue;
    const value = effectiveValue(info, inspect(info.key));
    if (value === undefined) continue;
    const path = info.key.split(".");
    const leaf = path.pop() ?? info.key;
    let node = out;
    for (const part of path) {
      const next = node[part];
      node = (typeof next === "object" && next !== null ? next : (node[part] = {})) as Record<string, unknown>;
    }
    node[leaf] = value;
  }
  return out;
}
