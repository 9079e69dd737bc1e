// Stands in for VS Code's `acquireVsCodeApi` in the test page: records posts and state,
// and collects CSP violations (there must be none).
window.__posted = [];
window.__violations = [];
window.__state = undefined;
document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
window.acquireVsCodeApi = () => ({
  postMessage: (message) => window.__posted.push(JSON.parse(JSON.stringify(message))),
  getState: () => window.__state,
  setState: (state) => { window.__state = state; },
});
