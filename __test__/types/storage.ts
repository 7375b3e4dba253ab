// The native stores' factories, and where their adapters go.

import {
  AgentHarness,
  createPostgresStorage,
  createSqliteStorage,
  type PostgresStorageOptions,
  type StorageAdapter,
} from '@noetic-tools/core';

const options: PostgresStorageOptions = { table: 'agents_kv', maxConnections: 4, connectTimeoutMs: 2000, timeoutMs: 10_000 };
const shared: StorageAdapter = createPostgresStorage('postgres://agent:secret@db.internal:5432/agents', options);
createPostgresStorage('host=localhost user=agent dbname=agents');
new AgentHarness({ name: 'shared', params: {}, storage: shared });
new AgentHarness({ name: 'local', params: {}, storage: createSqliteStorage('./agent.db') });

// @ts-expect-error the URL is a string
createPostgresStorage({ host: 'localhost' });
// @ts-expect-error unknown option
createPostgresStorage('postgres://localhost/db', { poolSize: 3 });
// @ts-expect-error timeouts are numbers
createPostgresStorage('postgres://localhost/db', { timeoutMs: '10s' });
