/**
 * Pin and Unpin on a message, a reply or a tool card: the button (with the mark a pinned row
 * shows) and the intent its click posts. Pinned or not is the transcript's `pinned`, as the
 * server patched it; the page only says that it asked.
 */
import type { FromPage } from "../../src/webviewProtocol";
import { button, el } from "./dom";
import type { PinState } from "./rows";

/** The mark and the button a row's head shows for `pin`; `what` names the thing ("this
 * message"), `key` is the row's item (whose row waits for the answer). */
export function pinControls(pin: PinState, what: string, key: string): HTMLElement[] {
  const toggle = pinButton(pin, what, key);
  return pin.pinned ? [pinMark("📌 pinned", "Pinned: every relief step keeps it word for word"), toggle] : [toggle];
}

/** Pin, or Unpin once the transcript says pinned; disabled while the server answers. */
export function pinButton(pin: PinState, what: string, key: string): HTMLButtonElement {
  // Waiting, it says what was asked (the server's patch may come before its answer).
  const label = pin.asking === "pin" ? "Pinning…" : pin.asking === "unpin" ? "Unpinning…" : pin.pinned ? "Unpin" : "Pin";
  const aria = pin.pinned ? `Unpin ${what}` : `Pin ${what}: every compaction keeps it word for word`;
  return button(label, aria, pin.pinned ? "unpin" : "pin", {
    class: "pin-toggle",
    "data-entry": pin.entryId,
    "data-key": key,
    disabled: pin.asking !== undefined,
  });
}

export function pinMark(text: string, title: string): HTMLElement {
  return el("span", { class: "pin-mark", title }, text);
}

/** What a Pin or Unpin button's click asks of the extension (from its `data-*`). */
export function pinIntent(action: string | undefined, data: DOMStringMap): Extract<FromPage, { type: "pin" | "unpin" }> | undefined {
  const entryId = data["entry"];
  if ((action !== "pin" && action !== "unpin") || entryId === undefined || entryId === "") return undefined;
  return { type: action, entryId };
}
