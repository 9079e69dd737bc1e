// The language client: starts `memento lsp` over stdio with the settings the user set,
// restarts it when the server settings or workspace trust change, and is the extension's
// `MementoServer` (requests, server commands, notifications that survive restarts).

import * as fs from "node:fs";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  type ErrorHandler,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  type NotificationHandler,
  type ProgressType,
  RevealOutputChannelOn,
  State,
  WorkDoneProgress,
} from "vscode-languageclient/node";
import type { ProgressValue as ModelProgress } from "./modelSetup";
import { errorMessage, type MementoServer } from "./ports";
import type { ModelPrepareResult } from "./protocol";
import * as names from "./protocolNames";
import { bundledProgram, describe, findOnPath, type ImportStrategy, resolveServerCommand, type ServerCommand } from "./serverCommand";
import { RestartPolicy, startFailure } from "./serverStart";
import { describeServer, mismatch, type ServerIdentity, serverIdentity } from "./serverVersion";
import { contributedSettings, explicitSettings, type SettingInfo } from "./settings";

export interface ProgressValue {
  token: string | number;
  value: { kind?: string; title?: string; message?: string; percentage?: number };
}

/** A LanguageClient that also tells listeners about every work-done progress value (the
 * built-in progress notification keeps working; the Compactions view shows the same steps). */
class MementoLanguageClient extends LanguageClient {
  readonly progress = new vscode.EventEmitter<ProgressValue>();
  /** The server has answered `initialize`. Until then the client's own notices ("couldn't
   * create connection", "initialization failed") only go to the log: a failed start is one
   * message of ours, which says what to set. */
  ran = false;

  override error(message: string, data?: unknown, showNotification: boolean | "force" = true): void {
    super.error(message, data, this.ran ? showNotification : false);
  }

  override onProgress<P>(type: ProgressType<P>, token: string | number, handler: NotificationHandler<P>): vscode.Disposable {
    return super.onProgress(type, token, (value: P) => {
      this.progress.fire({ token, value: value as ProgressValue["value"] });
      handler(value);
    });
  }
}

const OPEN_SETTINGS = "Open Settings";
const SHOW_LOG = "Show Server Log";

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The bundled server's program when this package carries one, made executable first: an
 * unpacked .vsix may have lost the bit (a zip tool, a copy). */
function bundledServer(extensionPath: string | undefined, output: vscode.LogOutputChannel): string | undefined {
  if (extensionPath === undefined) return undefined;
  const program = bundledProgram(extensionPath);
  if (!fs.existsSync(program)) return undefined;
  if (!isExecutable(program)) {
    try {
      fs.chmodSync(program, 0o755);
    } catch (error) {
      output.warn(`the bundled server is not executable and could not be made so: ${errorMessage(error)}`);
    }
  }
  return program;
}

export type Middleware = NonNullable<LanguageClientOptions["middleware"]>;

export class MementoClient implements MementoServer, vscode.Disposable {
  private client: MementoLanguageClient | undefined;
  /** Listeners per notification. The client keeps one handler per method (a second
   * registration replaces the first), so each method gets one that fans out to all. */
  private readonly handlers = new Map<string, Set<(params: unknown) => void>>();
  private readonly attached: vscode.Disposable[] = [];
  private readonly settings: SettingInfo[];
  private readonly running = new vscode.EventEmitter<boolean>();
  private readonly progressEvents = new vscode.EventEmitter<ProgressValue>();
  readonly onDidChangeRunning = this.running.event;
  readonly onProgress = this.progressEvents.event;
  /** Why the last start failed, for the status bar. */
  startError: string | undefined;
  /** The server that answered the last `initialize`, and how it was started. */
  server: { identity: ServerIdentity; command: ServerCommand } | undefined;
  private readonly extensionVersion: string;

  constructor(
    readonly output: vscode.LogOutputChannel,
    packageJson: unknown,
    private readonly middleware: Middleware = {},
    private readonly extensionPath?: string,
  ) {
    this.settings = contributedSettings(packageJson);
    const version = (packageJson as { version?: unknown } | undefined)?.version;
    this.extensionVersion = typeof version === "string" ? version : "?";
  }

  get isRunning(): boolean {
    return this.client?.state === State.Running;
  }

  /** What the server gets: the settings the user set (see settings.ts). */
  serverSettings(): Record<string, unknown> {
    const config = vscode.workspace.getConfiguration("memento");
    return explicitSettings(this.settings, (key) => config.inspect(key));
  }

  serverCommand(): ServerCommand {
    const config = vscode.workspace.getConfiguration("memento");
    return resolveServerCommand(
      {
        command: config.get<string>("server.command", ""),
        args: config.get<string[]>("server.args", ["lsp"]),
        importStrategy: config.get<ImportStrategy>("server.importStrategy", "useBundled"),
      },
      {
        which: (name) => findOnPath(name, process.env.PATH, isExecutable),
        bundled: bundledServer(this.extensionPath, this.output),
        trusted: vscode.workspace.isTrusted,
      },
    );
  }

  /** What the log says about the running server (Memento: Show Server Log adds it again). */
  describeServer(): string {
    if (this.server === undefined) return this.startError ? `the server did not start: ${this.startError}` : "the server is not running";
    return `${describeServer(this.server.identity, this.server.command)}; extension ${this.extensionVersion}`;
  }

  async start(): Promise<boolean> {
    const command = this.serverCommand();
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const restarts = new RestartPolicy();
    let crashes: ErrorHandler | undefined;
    const errorHandler: ErrorHandler = {
      // Errors on a live connection: as vscode-languageclient handles them.
      error: (error, message, count) => (crashes ??= client.createDefaultErrorHandler()).error(error, message, count),
      closed: () => {
        const decision = restarts.closed(client.ran);
        if (decision.restart) return { action: CloseAction.Restart, handled: true };
        return { action: CloseAction.DoNotRestart, message: decision.message, handled: decision.message === undefined };
      },
    };
    const client = new MementoLanguageClient(
      "memento",
      "Memento",
      { command: command.command, args: command.args, options: { cwd: folder, env: process.env } },
      {
        documentSelector: [{ scheme: "file" }],
        outputChannel: this.output,
        revealOutputChannelOn: RevealOutputChannelOn.Never,
        errorHandler,
        initializationFailedHandler: () => false, // no retry: the failure is reported once, below
        initializationOptions: () => ({ memento: this.serverSettings(), workspaceTrusted: vscode.workspace.isTrusted }),
        middleware: {
          ...this.middleware,
          workspace: {
            configuration: async (params, token, next) => {
              const answers = await next(params, token);
              if (!Array.isArray(answers)) return answers;
              return params.items.map((item, i) => (item.section === "memento" ? this.serverSettings() : answers[i]));
            },
          },
        },
      },
    );
    this.client = client;
    client.progress.event((value) => this.progressEvents.fire(value));
    for (const method of this.handlers.keys()) this.attach(client, method);
    const strategy = vscode.workspace.getConfiguration("memento").get<string>("server.importStrategy");
    this.output.info(`starting ${describe(command)} (importStrategy ${strategy}${vscode.workspace.isTrusted ? "" : ", workspace not trusted"})`);
    try {
      await client.start();
    } catch (error) {
      this.startError = `${describe(command)}: ${errorMessage(error)}`;
      this.output.error(`the server did not start: ${this.startError}`);
      this.running.fire(false);
      const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined;
      // A machine-scoped setting is a Remote setting where extensions run on another machine:
      // the user settings' value is not used there.
      const remote = vscode.env.remoteName !== undefined;
      void vscode.window
        .showErrorMessage(startFailure(command, { message: errorMessage(error), code }, remote), OPEN_SETTINGS, SHOW_LOG)
        .then((action) => {
          if (action === OPEN_SETTINGS && remote) void vscode.commands.executeCommand("workbench.action.openRemoteSettings", { query: "memento.server" });
          else if (action === OPEN_SETTINGS) void vscode.commands.executeCommand("workbench.action.openSettings", "memento.server");
          if (action === SHOW_LOG) this.output.show(true);
        });
      return false;
    }
    const identity = serverIdentity(client.initializeResult);
    this.server = { identity, command };
    this.output.info(this.describeServer());
    const wrong = mismatch(identity, command, this.extensionVersion, this.extensionPath !== undefined && bundledServer(this.extensionPath, this.output) !== undefined);
    if (wrong !== undefined) {
      // Its requests would fail one by one in ways that say nothing: stop it and say why once.
      this.startError = wrong;
      this.output.error(wrong);
      client.ran = false;
      await this.stop();
      this.server = undefined;
      void vscode.window.showErrorMessage(wrong, OPEN_SETTINGS, SHOW_LOG).then((action) => {
        if (action === OPEN_SETTINGS) void vscode.commands.executeCommand("workbench.action.openSettings", "memento.server");
        if (action === SHOW_LOG) this.output.show(true);
      });
      return false;
    }
    this.startError = undefined;
    client.ran = true;
    client.onDidChangeState((change) => this.running.fire(change.newState === State.Running));
    this.running.fire(true);
    return true;
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.server = undefined;
    for (const d of this.attached.splice(0)) d.dispose();
    if (client === undefined) return;
    try {
      if (client.state !== State.Stopped) await client.stop(5000);
    } catch (error) {
      this.output.warn(`stopping the server: ${errorMessage(error)}`);
    }
    client.progress.dispose();
    this.running.fire(false);
  }

  async restart(): Promise<boolean> {
    await this.stop();
    return this.start();
  }

  /** Tell the running server the settings changed (`workspace/didChangeConfiguration`). */
  async pushSettings(): Promise<void> {
    if (!this.isRunning || this.client === undefined) return;
    await this.client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { memento: this.serverSettings() },
    });
  }

  private live(): MementoLanguageClient {
    if (this.client === undefined || !this.isRunning) {
      throw new Error("the Memento server is not running (Memento: Show Server Log says why)");
    }
    return this.client;
  }

  /** A notification to the server; dropped while it is not running. */
  notify(method: string, params: object): void {
    if (this.client === undefined || !this.isRunning) return;
    void this.client.sendNotification(method, params).catch((error: unknown) => {
      this.output.warn(`${method}: ${errorMessage(error)}`);
    });
  }

  request<R>(method: string, params: object = {}): Promise<R> {
    return this.live().sendRequest<R>(method, params);
  }

  /** `memento/model/prepare` on a work-done token of ours: its `$/progress` values go to
   * `onProgress`, and `cancel` sends `$/cancelRequest` (the server stops and keeps nothing). */
  async prepareModel(params: { model: string }, onProgress: (value: ModelProgress) => void, cancel: vscode.CancellationToken): Promise<ModelPrepareResult> {
    const client = this.live();
    const token = `memento-model-${Date.now().toString(36)}`;
    const listening = client.onProgress(WorkDoneProgress.type, token, (value) => onProgress(value));
    try {
      return await client.sendRequest<ModelPrepareResult>(names.MODEL_PREPARE, { ...params, workDoneToken: token }, cancel);
    } finally {
      listening.dispose();
    }
  }

  execute<R>(command: string, argument: object = {}): Promise<R> {
    // Straight to the server: the middleware's interception is for commands the workbench runs.
    return this.live().sendRequest(ExecuteCommandRequest.type, { command, arguments: [argument] }) as Promise<R>;
  }

  private attach(client: MementoLanguageClient, method: string): void {
    this.attached.push(
      client.onNotification(method, (params: unknown) => {
        for (const handler of [...(this.handlers.get(method) ?? [])]) {
          try {
            handler(params);
          } catch (error) {
            this.output.error(`a ${method} listener failed: ${errorMessage(error)}`);
          }
        }
      }),
    );
  }

  onNotification<P>(method: string, handler: (params: P) => void): vscode.Disposable {
    const listener = handler as (params: unknown) => void;
    let listeners = this.handlers.get(method);
    if (listeners === undefined) {
      listeners = new Set();
      this.handlers.set(method, listeners);
      if (this.client !== undefined) this.attach(this.client, method);
    }
    listeners.add(listener);
    return new vscode.Disposable(() => listeners.delete(listener));
  }

  dispose(): void {
    void this.stop();
    this.running.dispose();
    this.progressEvents.dispose();
  }
}
