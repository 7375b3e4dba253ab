// -----------------------------------------------------------------------------
// @noetic-tools/core/inspector: a live page showing what each model call of a harness saw.
// -----------------------------------------------------------------------------

import type { AgentHarness } from '../index.js';

export interface InspectorOptions {
  /** The port to listen on; 0 (the default) takes any free one. */
  port?: number;
  /** The address to listen on; '127.0.0.1' unless told otherwise. */
  host?: string;
  /** How many of each thread's newest turns are kept (default 20). */
  turnsPerThread?: number;
  /** How many of the most recently active threads are kept (default 200). */
  threads?: number;
}

export interface Inspector {
  /** The page's address, with the random token every request must carry. */
  readonly url: string;
  /** Stops serving and recording, and forgets what was recorded. */
  close(): Promise<void>;
}

/** Starts recording the harness's model calls and serves a page that shows them, live. */
export declare function startInspector(harness: AgentHarness<any>, options?: InspectorOptions): Promise<Inspector>;
