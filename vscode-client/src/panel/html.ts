/**
 * The panel's page: `media/panel.html` with its placeholders filled (nonce, CSP, asset URIs).
 */

/** `{{name}}` → value, escaped for an attribute; `{{{name}}}` → a script's text, as it is
 * (one that could end its script element is an error). A placeholder without a value is an
 * error, not an empty string. */
export function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{\{\{(\w+)\}\}\}|\{\{(\w+)\}\}/g, (_, script: string | undefined, name: string | undefined) => {
    const key = script ?? name ?? "";
    const value = values[key];
    if (value === undefined) throw new Error(`panel.html: no value for {{${key}}}`);
    if (script === undefined) return escapeAttribute(value);
    if (/<\/script|<!--/i.test(value)) throw new Error(`panel.html: {{{${key}}}} could end its script element`);
    return value;
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
