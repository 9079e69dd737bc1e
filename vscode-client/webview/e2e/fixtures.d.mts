export function conversation(turns: number, options?: { prefix?: string; first?: number }): Record<string, unknown>[];
export function bigHistory(messages: number): Record<string, unknown>[];
