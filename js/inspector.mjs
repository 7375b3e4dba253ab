// ESM entry of @noetic-tools/core/inspector.
import inspector from './inspector.cjs';

export const { startInspector } = inspector;
