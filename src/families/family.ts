// The family contract moved to src/statemachine/family.ts: the kernel owns the contract it
// applies families through, so it imports nothing under src/families. This re-export keeps the
// families being changed on other branches (journal, assign, hibernate) building unchanged;
// everything else imports the contract from its new home.
export * from '../statemachine/family.js';
