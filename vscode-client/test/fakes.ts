// Typed fakes of the two ports: a server that answers from a script and records what it was
// asked, and a window whose user answers from a queue and whose messages are recorded.

import type { Disposable, MementoServer, PickItem, Ui } from "../src/ports";

type Answer = unknown | ((params: object) => unknown);

export class FakeServer implements MementoServer {
  readonly calls: { kind: "request" | "execute"; name: string; params: object }[] = [];
  private readonly answers = new Map<string, Answer[]>();
  private readonly handlers = new Map<string, ((params: unknown) => void)[]>();

  /** Queue answers for a method or command; an Error answer rejects. The last one repeats. */
  answer(name: string, ...answers: Answer[]): this {
    this.answers.set(name, [...(this.answers.get(name) ?? []), ...answers]);
    return this;
  }

  private reply<R>(kind: "request" | "execute", name: string, params: object): Promise<R> {
    this.calls.push({ kind, name, params });
    const queue = this.answers.get(name);
    if (!queue?.length) return Promise.reject(new Error(`Unhandled method ${name}`));
    const next = queue.length > 1 ? queue.shift() : queue[0];
    const value = typeof next === "function" ? (next as (p: object) => unknown)(params) : next;
    return value instanceof Error ? Promise.reject(value) : Promise.resolve(value as R);
  }

  request<R>(method: string, params: object = {}): Promise<R> {
    return this.reply("request", method, params);
  }

  execute<R>(command: string, argument: object = {}): Promise<R> {
    return this.reply("execute", command, argument);
  }

  onNotification<P>(method: string, handler: (params: P) => void): Disposable {
    const list = this.handlers.get(method) ?? [];
    list.push(handler as (params: unknown) => void);
    this.handlers.set(method, list);
    return { dispose: () => list.splice(list.indexOf(handler as (params: unknown) => void), 1) };
  }

  notify(method: string, params: unknown): void {
    for (const handler of this.handlers.get(method) ?? []) handler(params);
  }

  named(name: string) {
    return this.calls.filter((c) => c.name === name);
  }
}

export class FakeUi implements Ui {
  readonly messages: { kind: "info" | "warn" | "error"; message: string; actions: string[] }[] = [];
  readonly picks: { title: string; items: PickItem<unknown>[] }[] = [];
  readonly questions: { message: string; detail: string; buttons: string[] }[] = [];
  readonly texts: { title: string; content: string; language: string }[] = [];
  /** What the user answers, in order: a pick's label, an input's text, a button's title. */
  readonly answers: (string | undefined)[] = [];
  /** The action clicked on the next notification with actions. */
  notificationAction: string | undefined;

  constructor(...answers: (string | undefined)[]) {
    this.answers.push(...answers);
  }

  private next(): string | undefined {
    if (!this.answers.length) throw new Error("the fake user has no answer left");
    return this.answers.shift();
  }

  async pick<T>(items: PickItem<T>[], options: { title: string }): Promise<T | undefined> {
    this.picks.push({ title: options.title, items });
    const label = this.next();
    return items.find((item) => item.label === label)?.value;
  }

  async input(): Promise<string | undefined> {
    return this.next();
  }

  async confirm(message: string, detail: string, buttons: string[]): Promise<string | undefined> {
    this.questions.push({ message, detail, buttons });
    const answer = this.next();
    if (answer !== undefined && !buttons.includes(answer)) throw new Error(`no button ${answer} in ${buttons}`);
    return answer;
  }

  private record(kind: "info" | "warn" | "error", message: string, actions: string[]) {
    this.messages.push({ kind, message, actions });
    return Promise.resolve(actions.length ? this.notificationAction : undefined);
  }

  info(message: string, ...actions: string[]) {
    return this.record("info", message, actions);
  }

  warn(message: string, ...actions: string[]) {
    return this.record("warn", message, actions);
  }

  error(message: string, ...actions: string[]) {
    return this.record("error", message, actions);
  }

  async showText(title: string, content: string, language: string): Promise<void> {
    this.texts.push({ title, content, language });
  }

  async openSettings(): Promise<void> {}
}
