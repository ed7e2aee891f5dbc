export { type AuthProfileStatus, AuthProfiles, authProfilesFor, UnknownAuthProfileError } from "./auth-profiles.js";
export { type AuthFailureReason, authFailureReason } from "./cooldown.js";
export { withAuthProfiles } from "./keyed-provider.js";
export { type AuthProfile, authProfileProblems, type ResolvedAuthProfile, resolveAuthProfiles } from "./profiles.js";
export { type AuthRotation, type RunAuthHooks, RunCredentials } from "./run-credentials.js";
