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
// VS Code sets its theme as CSS variables on <html>; these are Dark Modern's.
const theme = {
  "--vscode-font-family": "system-ui, sans-serif", "--vscode-font-size": "13px",
  "--vscode-editor-font-family": "monospace", "--vscode-editor-font-size": "12px",
  "--vscode-foreground": "#cccccc", "--vscode-descriptionForeground": "#9d9d9d",
  "--vscode-sideBar-background": "#181818", "--vscode-editor-background": "#1f1f1f",
  "--vscode-button-background": "#0078d4", "--vscode-button-foreground": "#ffffff", "--vscode-button-hoverBackground": "#026ec1",
  "--vscode-button-secondaryBackground": "#313131", "--vscode-button-secondaryForeground": "#cccccc", "--vscode-button-secondaryHoverBackground": "#3c3c3c",
  "--vscode-input-background": "#313131", "--vscode-input-foreground": "#cccccc", "--vscode-input-border": "#3c3c3c",
  "--vscode-dropdown-background": "#313131", "--vscode-dropdown-foreground": "#cccccc", "--vscode-dropdown-border": "#3c3c3c",
  "--vscode-panel-border": "#2b2b2b", "--vscode-focusBorder": "#0078d4", "--vscode-textLink-foreground": "#4daafc",
  "--vscode-textCodeBlock-background": "#2b2b2b", "--vscode-editorWidget-background": "#202020",
  "--vscode-badge-background": "#616161", "--vscode-badge-foreground": "#f8f8f8",
  "--vscode-editorWarning-foreground": "#cca700", "--vscode-editorError-foreground": "#f85149", "--vscode-editorInfo-foreground": "#3794ff",
  "--vscode-errorForeground": "#f85149", "--vscode-progressBar-background": "#0078d4",
  "--vscode-inputValidation-warningBackground": "#352a05", "--vscode-inputValidation-warningBorder": "#b89500",
  "--vscode-inputValidation-infoBackground": "#063b49", "--vscode-inputValidation-infoBorder": "#1a85ff",
  "--vscode-symbolIcon-keywordForeground": "#569cd6", "--vscode-symbolIcon-stringForeground": "#ce9178",
  "--vscode-symbolIcon-functionForeground": "#dcdcaa", "--vscode-symbolIcon-numberForeground": "#b5cea8",
  "--vscode-charts-blue": "#3794ff", "--vscode-charts-green": "#89d185", "--vscode-charts-orange": "#d18616",
  "--vscode-testing-iconPassed": "#73c991",
};
for (const [name, value] of Object.entries(theme)) document.documentElement.style.setProperty(name, value);
