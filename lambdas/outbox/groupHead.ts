/** The outbox's group-head read, for applications (docs/api.md); the store owns it. */
export { readGroupHeadVersion } from '../store/groupHead.js';
