// Which server answered, and whether this extension can talk to it: `initialize`'s
// `serverInfo.version` and the protocol version of Memento's own methods
// (`capabilities.experimental.memento.protocolVersion`, server/memento/lsp/protocol.py).
// A server that speaks another protocol is stopped with one message saying which side to
// change, instead of failing request by request.

import { describe, type ServerCommand } from "./serverCommand";

/** The `memento/*` protocol this extension speaks; the server's PROTOCOL_VERSION. */
export const PROTOCOL_VERSION = 2;

export interface ServerIdentity {
  version: string;
  /** Undefined: a server from before the protocol had a version. */
  protocol: number | undefined;
}

export function serverIdentity(result: unknown): ServerIdentity {
  const answer = (result ?? {}) as {
    serverInfo?: { version?: unknown };
    capabilities?: { experimental?: { memento?: { protocolVersion?: unknown } } };
  };
  const version = answer.serverInfo?.version;
  const protocol = answer.capabilities?.experimental?.memento?.protocolVersion;
  return {
    version: typeof version === "string" && version ? version : "(unknown version)",
    protocol: typeof protocol === "number" ? protocol : undefined,
  };
}

/** The log's line for the server that started. */
export function describeServer(identity: ServerIdentity, command: ServerCommand): string {
  const from = { bundled: "bundled with the extension", setting: "memento.server.command", path: "PATH", python: "python3 -m memento" }[command.source];
  return `server: memento ${identity.version} (protocol ${identity.protocol ?? "none"}), ${describe(command)} (${from})`;
}

/** The message for a server this extension cannot work with, or undefined when it can. */
export function mismatch(identity: ServerIdentity, command: ServerCommand, extensionVersion: string, hasBundle: boolean): string | undefined {
  if (identity.protocol === PROTOCOL_VERSION) return undefined;
  const older = identity.protocol === undefined || identity.protocol < PROTOCOL_VERSION;
  const server = `memento ${identity.version} (protocol ${identity.protocol ?? "none"})`;
  const ours = `this extension (${extensionVersion}) speaks protocol ${PROTOCOL_VERSION}`;
  if (command.source === "bundled") {
    return `Memento: the bundled server is ${server} but ${ours}: the extension's package is damaged or mixed up. Reinstall the extension.`;
  }
  const fix = older
    ? `Upgrade it to ${extensionVersion} (\`uv tool upgrade memento-lsp\`, or \`pipx upgrade memento-lsp\`)`
    : `Update the extension to ${identity.version}, or install memento ${extensionVersion} there`;
  const bundle = hasBundle ? `, or set "memento.server.importStrategy" to "useBundled" to run the server this extension carries` : "";
  return `Memento: the server at ${describe(command)} is ${server}, ${older ? "older than" : "newer than"} ${ours}, so it was stopped. ${fix}${bundle}.`;
}
