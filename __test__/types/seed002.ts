// Seed 002 ("Custom Memory Layers") compiled as written, plus the typed-memory
// acceptance checks of DECISIONS D24/D25. Steps that redeclare a name live in
// their own block; the imports of all steps are merged at the top.

import { z } from 'zod';
import {
  AgentHarness,
  Slot,
  createInMemoryStorage,
  createMessage,
  layerData,
  layerFn,
  loop,
  memory,
  observationalMemory,
  react,
  spawn,
  step,
  until,
  workingMemory,
  type BudgetConfig,
  type Context,
  type ContextMemory,
  type InferMemory,
  type LayerTimeouts,
  type MemoryConfig,
  type MemoryHooks,
  type MemoryLayer,
  type StepLoop,
  type StepRun,
  type StepSpawn,
  type WorkingMemoryState,
} from '@noetic-tools/core';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(_ok?: T): void {}

// Step 1: Define Your State Type
interface MyLayerState {
  entries: string[];
  lastUpdated: number;
}

// Step 2: Choose a Slot
{
  // Use a built-in constant...
  const slot = Slot.PROCEDURAL; // 250
  const check: 250 = slot;
  void check;
}
{
  // ...or pick your own number
  const slot = 275; // between PROCEDURAL and EPISODIC
  void slot;
}

// Step 4: Configure the Budget
const fixedBudget: BudgetConfig = 500;
const rangeBudget: BudgetConfig = { min: 200, max: 1500 };
const autoBudget: BudgetConfig = 'auto';
void [fixedBudget, rangeBudget, autoBudget];

// Step 6: Set Timeouts (Optional)
const timeouts: Partial<LayerTimeouts> = {
  store: 30_000,
  recall: 10_000,
};
void timeouts;

// Steps 5 and 7: a layer typed as MemoryLayer<MyLayerState>, registered with react
{
  function myCustomLayer(): MemoryLayer<MyLayerState> {
    return {
      id: 'my-custom-layer',
      name: 'My Custom Layer',
      slot: 275,
      scope: 'thread',
      budget: { min: 200, max: 1000 },
      hooks: {
        async init({ storage }) {
          const saved = await storage.get<MyLayerState>('state');
          return {
            state: saved ?? { entries: [], lastUpdated: 0 },
          };
        },
        async recall({ state, budget }) {
          void budget;
          if (!state.entries.length) return null;
          const text = state.entries.join('\n');
          const content = `<my_context>\n${text}\n</my_context>`;
          return {
            items: [createMessage(content, 'developer')],
            tokenCount: Math.ceil(content.length / 4),
          };
        },
        async store({ newItems, state }) {
          // Extract assistant text from the model's latest output
          const texts: string[] = [];
          for (const item of newItems) {
            if (item.type !== 'message' || item.role !== 'assistant') continue;
            const parts = Array.isArray(item.content) ? item.content : [item.content];
            for (const part of parts) {
              if (part.type === 'output_text') texts.push(part.text);
            }
          }
          if (!texts.length) return;
          return {
            state: {
              entries: [...state.entries, ...texts],
              lastUpdated: Date.now(),
            },
          };
        },
        async onComplete({ state, outcome }) {
          void outcome;
          // Optionally finalize state based on outcome
          return {
            state: {
              ...state,
              lastUpdated: Date.now(),
            },
          };
        },
      },
    };
  }

  // Hooks typed on their own (seed imports MemoryHooks in Step 5).
  const hooksOnly: MemoryHooks<MyLayerState> = myCustomLayer().hooks;
  void hooksOnly;

  // Step 7: Register with the Agent (react without tools: D24)
  const agent = react({
    model: 'openai/gpt-4o',
    instructions: 'You are a helpful assistant.',
    memory: [workingMemory(), myCustomLayer(), observationalMemory()],
  });

  const myStorageAdapter = createInMemoryStorage();
  const harness = new AgentHarness({
    name: 'my-agent',
    params: {},
    storage: myStorageAdapter,
  });

  async function runAgent(): Promise<string> {
    return harness.run(agent, 'hello');
  }
  void runAgent;
}

// Step 8: Add a provides Map (Optional)
function myCustomLayer() {
  return {
    id: 'my-custom-layer' as const,
    name: 'My Custom Layer',
    slot: 275,
    scope: 'thread',
    budget: { min: 200, max: 1e3 },
    provides: {
      // Data: read-only projection from state
      entryCount: layerData<number, MyLayerState>({
        read: (state) => state.entries.length,
      }),
      // Function: callable from code and auto-injected as LLM tool
      addEntry: layerFn<{ text: string }, void, MyLayerState>({
        description: 'Add a new entry to the custom layer.',
        input: z.object({ text: z.string() }),
        output: z.void(),
        execute: async (args, state) => ({
          result: undefined,
          state: {
            entries: [...state.entries, args.text],
            lastUpdated: Date.now(),
          },
        }),
      }),
    },
    hooks: {
      async init({ storage }) {
        const saved = await storage.get<MyLayerState>('state');
        return { state: saved ?? { entries: [], lastUpdated: 0 } };
      },
      async recall({ state }) {
        if (!state.entries.length) return null;
        const text = state.entries.join('\n');
        const content = `<my_context>\n${text}\n</my_context>`;
        return {
          items: [createMessage(content, 'developer')],
          tokenCount: Math.ceil(content.length / 4),
        };
      },
    },
  } satisfies MemoryLayer<MyLayerState>;
}

// Type-Safe Access with memory() and InferMemory
const mem = memory([workingMemory(), myCustomLayer()]);
type Mem = InferMemory<typeof mem>;

assertType<
  Equal<
    Mem,
    {
      'working-memory': {
        snapshot: WorkingMemoryState;
        update: (args: Record<string, unknown>) => Promise<void>;
      };
      'my-custom-layer': {
        entryCount: number;
        addEntry: (args: { text: string }) => Promise<void>;
      };
    }
  >
>();

const myStep = step.run({
  id: 'use-memory',
  execute: async (input: string, ctx: Context<Mem>) => {
    const count = ctx.memory['my-custom-layer'].entryCount;
    await ctx.memory['my-custom-layer'].addEntry({ text: input });
    return count;
  },
});
const myStepTyped: StepRun<Mem, string, number> = myStep;
void myStepTyped;

// -----------------------------------------------------------------------------
// D25: typed memory configs flow through react, spawn, loop and the harness
// -----------------------------------------------------------------------------

const asDefaultConfig: MemoryConfig = mem;
void asDefaultConfig;

const typedAgent = react({ model: 'openai/gpt-4o', memory: mem });
const typedSpawn = spawn({ id: 'typed-spawn', child: myStep, memory: mem });
const spawnCheck: StepSpawn<Mem, string, number> = typedSpawn;
void spawnCheck;
const spawnWithLayers = spawn({ id: 'layers-spawn', child: myStep, memory: mem.layers });
void spawnWithLayers;

const typedLoop = loop({
  id: 'typed-loop',
  steps: [myStep],
  until: until.maxSteps(3),
});
const loopCheck: StepLoop<Mem, string, number> = typedLoop;
void loopCheck;

// A ContextMemory step mixes with typed steps without casts.
const plainLlm = step.llm<ContextMemory, string, number>({
  id: 'plain-llm',
  model: 'openai/gpt-4o',
});
const mixedLoop = loop({ id: 'mixed-loop', steps: [myStep, plainLlm], until: until.maxSteps(2) });

const harness = new AgentHarness({
  name: 'my-agent',
  params: {},
  storage: createInMemoryStorage(),
  memory: mem,
});

async function runAll(): Promise<void> {
  const count: number = await harness.run(myStep, 'hello');
  const fromLoop: number = await harness.run(typedLoop, 'x');
  const fromSpawn: number = await harness.run(typedSpawn, 'x');
  const fromMixed: number = await harness.run(mixedLoop, 'x');
  const fromAgent: string = await harness.run(typedAgent, 'hello');
  // Upstream's explicit two-argument form still works.
  const explicit = await harness.run<string, number>(myStep, 'hello');
  // An existing context may be passed along.
  const ctx = harness.createContext({ memory: mem.layers });
  const withCtx: number = await harness.run(myStep, 'hello', ctx);
  void [count, fromLoop, fromSpawn, fromMixed, fromAgent, explicit, withCtx];
}
void runAll;

// A harness with the built-in scripted model, a real tokenizer and a typed initial step.
const greet = step.run({
  id: 'greet',
  execute: async (input: string, ctx: Context<Mem>) => `${input} (${ctx.memory['my-custom-layer'].entryCount})`,
});
const scripted = new AgentHarness({
  name: 'scripted-agent',
  params: { tenant: 'acme' },
  llm: {
    provider: 'scripted',
    script: [
      { toolCalls: [{ name: 'my-custom-layer/addEntry', arguments: { text: 'remember me' } }] },
      { toolCalls: [{ name: 'working-memory/update', arguments: '{"mood":"happy"}' }] },
      { text: 'Done.', usage: { inputTokens: 12, outputTokens: 2 } },
    ],
  },
  tokenizer: 'o200k',
  initialStep: spawn({ id: 'initial', child: greet, memory: mem }),
});
const tenant: string = scripted.config.params.tenant;
void tenant;

// Memory hooks receive an optional AbortSignal (D5).
const signalAware: MemoryLayer<number> = {
  id: 'signal-aware',
  slot: Slot.RAG,
  scope: 'execution',
  hooks: {
    async recall({ signal }) {
      const aborted: boolean | undefined = signal?.aborted;
      return aborted ? null : 'fresh';
    },
  },
};
void signalAware;

// -----------------------------------------------------------------------------
// Negative checks
// -----------------------------------------------------------------------------

step.run({
  id: 'negative',
  execute: async (_input: string, ctx: Context<Mem>) => {
    // @ts-expect-error wrong argument shape for a typed layer function
    await ctx.memory['my-custom-layer'].addEntry({ txt: 1 });
    // @ts-expect-error unknown layer id under typed memory
    void ctx.memory['no-such-layer'];
    // @ts-expect-error unknown property of a typed layer
    void ctx.memory['working-memory'].nope;
    // @ts-expect-error data entries are values, not functions
    ctx.memory['my-custom-layer'].entryCount();
    return 0;
  },
});

// @ts-expect-error react still requires a model
react({ instructions: 'no model' });

const badLayer: MemoryLayer<MyLayerState> = {
  id: 'bad',
  slot: 1,
  // @ts-expect-error not a MemoryScope
  scope: 'session',
  hooks: {},
};
void badLayer;

void new AgentHarness({
  name: 'bad-tokenizer',
  params: {},
  // @ts-expect-error unsupported tokenizer
  tokenizer: 'gpt2',
});
