// Permissions on resources, and how a user's roles decide one. Pure: the
// server's one check point (src/server/guard/access.ts) and the tests use it alike.
//
// A resource is a list path ('/app/config') or a family's named thing
// ('journal:orders', 'assign:sync', 'cluster'). A rule names a prefix of
// resources and grants or denies permissions on everything below it:
//   - '/' covers every list path; '/app' covers '/app' and '/app/...', not '/apple';
//   - 'journal:' covers every journal, 'journal:orders' that journal only;
//   - '*' covers every resource of every kind.
// For each permission the longest matching prefix among all the user's roles
// decides; at equal length a deny wins. Nothing matching: denied.
// (Longest-prefix-wins with explicit deny is how Consul's ACL rules resolve;
// the encoding is our own.)
import type { Permission, Rule } from './wire.js';

export { MAX_RULE_PREFIX_BYTES, PERMISSIONS, prefixProblem, WHOLE_RESOURCES, type Permission, type Rule } from './wire.js';

/** The built-in role that may do everything, everywhere; it cannot be changed or removed. */
export const ROOT_ROLE = 'root';
/** The user that must exist, holding the root role, before authentication can be turned on. */
export const ROOT_USER = 'root';

/** Whether a rule on `prefix` covers `resource`. */
export function covers(prefix: string, resource: string): boolean {
  if (prefix === '*') return true;
  if (resource === prefix) return true;
  if (!resource.startsWith(prefix)) return false;
  // '/' and 'journal:' end at a boundary; '/app' covers '/app/x' but not '/apple'.
  return prefix.endsWith('/') || prefix.endsWith(':') || resource.charCodeAt(prefix.length) === 0x2f; // '/'
}

/** The length a matching prefix counts for ('*' is the least specific). */
function specificity(prefix: string): number {
  return prefix === '*' ? -1 : prefix.length;
}

/** Whether `rules` (all of a user's roles' rules together) allow `perm` on `resource`. */
export function allows(rules: readonly Rule[], perm: Permission, resource: string): boolean {
  let best = -2;
  let verdict = false;
  for (const rule of rules) {
    if (!rule.perms.includes(perm) || !covers(rule.prefix, resource)) continue;
    const s = specificity(rule.prefix);
    if (s > best) {
      best = s;
      verdict = !rule.deny;
    } else if (s === best && rule.deny) verdict = false;
  }
  return verdict;
}

/** Whether `rules` allow `perm` on something at or below `prefix` (a prefix watch or an ls may show parts of it). */
export function allowsAnyBelow(rules: readonly Rule[], perm: Permission, prefix: string): boolean {
  if (allows(rules, perm, prefix)) return true;
  return rules.some((r) => !r.deny && r.perms.includes(perm) && r.prefix !== '*' && covers(prefix, r.prefix));
}
