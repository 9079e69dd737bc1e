/**
 * The inline start of the page (`early.ts`): built into media/panel-boot.js, which the
 * extension puts in a nonce'd inline script ahead of the page's stylesheet and script.
 */
import { startEarly, type VsCodeApi } from "./early";

declare function acquireVsCodeApi(): VsCodeApi;

startEarly(acquireVsCodeApi());
