// What other families may use of the journal family (docs/architecture.md "A family's
// public surface"): where a journal's definition is stored and how to read it (node
// assignment checks the journal its purge jobs go to).
export { definitionKey } from './keys.js';
export { decodeDefinition } from './records.js';
