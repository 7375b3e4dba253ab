// The package as CommonJS (`require`): the same agent as agent.mts, with the built-in working memory.
import { AgentHarness, createSqliteStorage, memory, react, workingMemory } from '@noetic-tools/core';

async function main(): Promise<void> {
  const file = 'cjs.db'; // in the project's folder, made anew for each check
  const harness = new AgentHarness({
    name: 'install-check',
    params: {},
    storage: createSqliteStorage(file),
    initialStep: react({ model: 'any', maxSteps: 1 }),
    memory: memory([workingMemory()]),
    llm: { provider: 'scripted', script: [{ toolCalls: [{ name: 'working-memory/update', arguments: { name: 'Ada' } }] }, { text: 'Hello, Ada.' }] },
  });
  await harness.execute("Hi, I'm Ada", { threadId: 'cjs' });
  const { text } = await harness.getAgentResponse({ threadId: 'cjs' });
  const keys = await createSqliteStorage(file).list('layers/');
  console.log(`cjs: ${text} ${JSON.stringify(keys)}`);
}

// A rejection ends Node with an error and exit code 1.
void main();
