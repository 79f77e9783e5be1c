// The module scripts/build-ui.ts writes from the family folders (scripts/family-parts.ts):
// every src/families/<name>/panel.tsx's `panel`, in their `order`.
declare module 'vera:family-panels' {
  export const panels: readonly import('./panel-kit.js').FamilyPanel[];
}
