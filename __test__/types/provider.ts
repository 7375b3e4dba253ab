// The OpenRouter provider's options: upstream's `LlmProviderConfig` plus `baseUrl`; the scripted model stays.

import { AgentHarness, type LlmProviderConfig } from '@noetic-tools/core';

const openrouter: LlmProviderConfig = { provider: 'openrouter', apiKey: 'sk-or-test', cache: true, baseUrl: 'http://127.0.0.1:9/api/v1' };
const fromEnv: LlmProviderConfig = { provider: 'openrouter' };
const viaProxy = new AgentHarness({ name: 'proxied', params: {}, llm: openrouter });
const keyFromEnv = new AgentHarness({ name: 'env', params: {}, llm: fromEnv, streamIdleTimeoutMs: 60_000 });
const scripted = new AgentHarness({ name: 'offline', params: {}, llm: { provider: 'scripted', script: [{ text: 'hi' }] } });
void [viaProxy, keyFromEnv, scripted];

// @ts-expect-error baseUrl is a string
const badUrl: LlmProviderConfig = { provider: 'openrouter', baseUrl: 42 };
void badUrl;
