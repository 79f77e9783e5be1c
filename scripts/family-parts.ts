// What a family folder brings to the builds besides its server side, found by
// file name, so a new family reaches the browser client, the dashboard and the
// client packages without an edit outside its folder:
//
//   src/families/<name>/client.ts   its client: exported by the browser bundle
//                                   (/ui/vera-client.js, `vera/browser`) and by
//                                   `vera/families/<name>` in both packages
//   src/families/<name>/panel.tsx   its dashboard tab: `export const panel: FamilyPanel`
//                                   (src/ui/panel-kit.ts), ordered by `panel.order`
//
// A folder counts as a family when it has an index.ts (what the registry imports).
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export interface FamilyParts {
  readonly name: string;
  /** Relative to the project root, or null. */
  readonly client: string | null;
  readonly panel: string | null;
}

export function familyParts(root: string): FamilyParts[] {
  const dir = join(root, 'src/families');
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(dir, d.name, 'index.ts')))
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const part = (file: string): string | null => (existsSync(join(dir, name, file)) ? `src/families/${name}/${file}` : null);
      return { name, client: part('client.ts'), panel: part('panel.tsx') };
    });
}

/** The browser client's entry: the client library and every family's client. */
export function browserClientSource(parts: readonly FamilyParts[]): string {
  const lines = [`export * from './src/client/index.ts';`];
  for (const p of parts) if (p.client !== null) lines.push(`export * from './${p.client}';`);
  return `${lines.join('\n')}\n`;
}

/** The types of that entry, as dist/client/browser.d.ts (written by the UI build beside tsc's output). */
export function browserClientTypes(parts: readonly FamilyParts[]): string {
  const lines = ['// Written by scripts/build-ui.ts: the types of /ui/vera-client.js (`vera/browser`).', `export * from './index.js';`];
  for (const p of parts) if (p.client !== null) lines.push(`export * from '../families/${p.name}/client.js';`);
  return `${lines.join('\n')}\n`;
}

/** The dashboard's family tabs (the module `vera:family-panels`), in their `order`. */
export function familyPanelsSource(parts: readonly FamilyParts[]): string {
  const withPanel = parts.filter((p) => p.panel !== null);
  const imports = withPanel.map((p, i) => `import { panel as p${i} } from './${p.panel}';`);
  const list = withPanel.map((_, i) => `p${i}`).join(', ');
  return `${imports.join('\n')}\nexport const panels = [${list}].sort((a, b) => a.order - b.order);\n`;
}
