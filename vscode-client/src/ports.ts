// The two things command handlers and views talk to, as small interfaces: the Memento
// server (over the language client) and the parts of the VS Code window they use. The
// extension passes the real ones; unit tests pass typed fakes.

export interface Disposable {
  dispose(): void;
}

export interface MementoServer {
  /** A `memento/*` request; rejects with the server's error message. */
  request<R>(method: string, params?: object): Promise<R>;
  /** A server command (`workspace/executeCommand` with one object argument). */
  execute<R>(command: string, argument?: object): Promise<R>;
  onNotification<P>(method: string, handler: (params: P) => void): Disposable;
}

export interface PickItem<T> {
  label: string;
  description?: string;
  detail?: string;
  value: T;
}

export interface Ui {
  pick<T>(items: PickItem<T>[], options: { title: string; placeholder?: string }): Promise<T | undefined>;
  input(options: { title: string; prompt?: string; placeholder?: string; value?: string }): Promise<string | undefined>;
  /** A modal question: resolves to the chosen button's title, undefined when cancelled. */
  confirm(message: string, detail: string, buttons: string[]): Promise<string | undefined>;
  info(message: string, ...actions: string[]): Promise<string | undefined>;
  warn(message: string, ...actions: string[]): Promise<string | undefined>;
  error(message: string, ...actions: string[]): Promise<string | undefined>;
  /** Open read-only text (markdown) in an editor. */
  showText(title: string, content: string, language: string): Promise<void>;
  openSettings(query: string): Promise<void>;
}

/** The message of a rejected request, as the user should read it. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === "object" && error !== null && "message" in error) return String(error.message);
  return String(error);
}
