// Coordination recipes on top of the client: leader election, locks, service discovery.
export { LeaderElection, type CampaignOptions, type Leadership } from './leader-election.js';
export { Mutex, type AcquireOptions, type LockHandle } from './lock.js';
export { discover, register, servicePath, SERVICES_ROOT, type Discovery, type Registration } from './service-registry.js';
export { ListView } from './list-view.js';
export { contenderItem, PRESENCE_SEGMENT, takeTurn, type Turn } from './queue.js';
