// ESM entry of @noetic-tools/core/unstable.
import unstable from './unstable.cjs';

export const { allocateBudgets, assembleView, checkBudget, createScopedStorage, frameworkCast, retargetCwdForSpawn } = unstable;
