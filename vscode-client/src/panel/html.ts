/**
 * The panel's page: `media/panel.html` with its placeholders filled (nonce, CSP, asset URIs).
 */

/** `{{name}}` → value; a placeholder without a value is an error, not an empty string. */
export function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`panel.html: no value for {{${name}}}`);
    return escapeAttribute(value);
  });
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/**
 * Nothing runs but the page's own script (by nonce); styles, images and fonts come only
 * from the extension's media folder; no network, frames, forms or inline styles.
 */
export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src ${cspSource}`,
    `img-src ${cspSource} data:`,
    `font-src ${cspSource}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
}

/** 128 random bits, base64: a fresh one for every page load. */
export function makeNonce(random: (bytes: number) => Uint8Array): string {
  return btoa(String.fromCharCode(...random(16)));
}
