/**
 * The page's side of the channel: typed posts to the extension, checked messages from it,
 * and the small UI state VS Code keeps for the page (`getState/setState`).
 */
import { parseToPage, type FromPage, type ToPage } from "../../src/webviewProtocol";

export interface PanelState {
  draft: string;
  contextOpen: boolean;
}

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

export class Channel {
  private readonly api: VsCodeApi = acquireVsCodeApi();
  private nextId = 1;

  post(message: FromPage): void {
    this.api.postMessage(message);
  }

  requestId(): number {
    return this.nextId++;
  }

  listen(handler: (message: ToPage) => void): void {
    window.addEventListener("message", (event: MessageEvent<unknown>) => {
      let message: ToPage;
      try {
        message = parseToPage(event.data);
      } catch (error) {
        console.warn(`memento panel: ignored a message: ${String(error)}`);
        return;
      }
      handler(message);
    });
  }

  get state(): PanelState {
    const saved = this.api.getState() as Partial<PanelState> | undefined;
    return { draft: typeof saved?.draft === "string" ? saved.draft : "", contextOpen: saved?.contextOpen === true };
  }

  save(state: PanelState): void {
    this.api.setState(state);
  }
}
