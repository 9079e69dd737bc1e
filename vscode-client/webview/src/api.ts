/**
 * The page's side of the channel: typed posts to the extension, checked messages from it,
 * and the small UI state VS Code keeps for the page (`getState/setState`).
 */
import { parseToPage, type FromPage, type ToPage } from "../../src/webviewProtocol";
import { takeEarly, type EarlyStart, type VsCodeApi } from "./early";

export interface PanelState {
  draft: string;
  contextOpen: boolean;
}

declare function acquireVsCodeApi(): VsCodeApi;

export class Channel {
  private readonly api: VsCodeApi;
  private nextId: number;
  private readonly early: EarlyStart | undefined;
  /** The tail request the inline start already sent (undefined: none was sent). */
  readonly earlyTail: number | undefined;
  /** The session list request the inline start already sent. */
  readonly earlySessions: number | undefined;

  constructor() {
    this.early = takeEarly();
    this.api = this.early?.api ?? acquireVsCodeApi();
    this.nextId = this.early?.nextId ?? 1;
    this.earlyTail = this.early?.tailRequest;
    this.earlySessions = this.early?.sessionsRequest;
  }

  post(message: FromPage): void {
    this.api.postMessage(message);
  }

  requestId(): number {
    return this.nextId++;
  }

  /** Every message from the extension, checked: first those the inline start kept, in order. */
  listen(handler: (message: ToPage) => void): void {
    const receive = (data: unknown): void => {
      let message: ToPage;
      try {
        message = parseToPage(data);
      } catch (error) {
        console.warn(`memento panel: ignored a message: ${String(error)}`);
        return;
      }
      handler(message);
    };
    window.addEventListener("message", (event: MessageEvent<unknown>) => receive(event.data));
    // In the same task as the listener above: no message can fall between the two.
    this.early?.stop();
    for (const data of this.early?.messages.splice(0) ?? []) receive(data);
  }

  get state(): PanelState {
    const saved = this.api.getState() as Partial<PanelState> | undefined;
    return { draft: typeof saved?.draft === "string" ? saved.draft : "", contextOpen: saved?.contextOpen === true };
  }

  save(state: PanelState): void {
    this.api.setState(state);
  }
}
