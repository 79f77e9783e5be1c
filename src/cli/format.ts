// Readable output of the CLI. (--json output is plain JSON, as json.ts writes it:
// binary as {"$binary": base64}, integers past 2^53 as strings.)
import type { ChangeEvent, Item, ResyncList } from '../protocol/index.js';
import { jsonText } from '../protocol/json.js';

export function formatItem(item: Item): string {
  const owner = item.owner === null ? 'persistent' : `owner=${item.owner}`;
  return `#${item.index} ${owner} ${jsonText(item.data)}`;
}

export function formatEvent(event: ChangeEvent): string {
  return `[${event.index}] ${event.type} ${event.path} ${formatItem(event.item)}`;
}

export function formatResync(list: ResyncList): string {
  const items = list.items.map((item) => `\n  ${formatItem(item)}`).join('');
  return `[${list.index}] resync ${list.path}: ${list.items.length} item(s)${items}`;
}

/** `key: value` lines for a JSON object; nested values are shown as JSON, lists of objects one per line. */
export function formatRecord(record: Readonly<Record<string, unknown>>): string {
  const lines: string[] = [];
  for (const [key, value] of Object.entries(record)) {
    if (Array.isArray(value) && value.every((v) => typeof v === 'object' && v !== null && !Array.isArray(v))) {
      lines.push(`${key}:${value.length === 0 ? ' (none)' : ''}`);
      for (const entry of value as Array<Record<string, unknown>>) {
        lines.push(`  - ${Object.entries(entry).map(([k, v]) => `${k}=${typeof v === 'string' ? v : jsonText(v)}`).join(' ')}`);
      }
    } else {
      lines.push(`${key}: ${typeof value === 'string' ? value : jsonText(value)}`);
    }
  }
  return lines.join('\n');
}
