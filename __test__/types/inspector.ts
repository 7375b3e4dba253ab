// The inspector's types: what startInspector takes and gives.
import { AgentHarness } from '@noetic-tools/core';
import { startInspector, type Inspector, type InspectorOptions } from '@noetic-tools/core/inspector';

declare const harness: AgentHarness<{ user: string }>;

export async function open(): Promise<string> {
  const options: InspectorOptions = { port: 0, host: '127.0.0.1', turnsPerThread: 5, threads: 10 };
  const inspector: Inspector = await startInspector(harness, options);
  await startInspector(harness);
  const url: string = inspector.url;
  // @ts-expect-error the URL is read-only
  inspector.url = 'elsewhere';
  // @ts-expect-error a port is a number
  await startInspector(harness, { port: '80' });
  await inspector.close();
  return url;
}
