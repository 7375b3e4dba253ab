// ESM entry of @noetic-tools/core/unstable.
import unstable from './unstable.cjs';

export const { allocateBudgets, assembleView, checkBudget, createLayerStateStore, createScopedStorage, frameworkCast, retargetCwdForSpawn } = unstable;
