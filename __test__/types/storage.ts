// The native stores' factories, and where their adapters go.

import {
  AgentHarness,
  createPostgresStorage,
  createSqliteStorage,
  createInMemoryStorage,
  type PostgresStorageAdapter,
  type PostgresStorageOptions,
  type StorageAdapter,
} from '@noetic-tools/core';

const options: PostgresStorageOptions = { table: 'agents_kv', maxConnections: 4, connectTimeoutMs: 2000, timeoutMs: 10_000, idleTimeoutMs: 0 };
const pooled: PostgresStorageAdapter = createPostgresStorage('postgres://agent:secret@db.internal:5432/agents', options);
const shared: StorageAdapter = pooled;
createPostgresStorage('host=localhost user=agent dbname=agents');
new AgentHarness({ name: 'shared', params: {}, storage: shared });
new AgentHarness({ name: 'pooled', params: {}, storage: pooled });
new AgentHarness({ name: 'local', params: {}, storage: createSqliteStorage('./agent.db') });
const closing: Promise<void> = pooled.close();
void closing;

// Only the PostgreSQL store holds connections to close.
// @ts-expect-error the SQLite store has no close()
createSqliteStorage('./agent.db').close();
// @ts-expect-error the in-memory store has no close()
createInMemoryStorage().close();
// @ts-expect-error a plain StorageAdapter promises no close()
shared.close();

// @ts-expect-error the URL is a string
createPostgresStorage({ host: 'localhost' });
// @ts-expect-error unknown option
createPostgresStorage('postgres://localhost/db', { poolSize: 3 });
// @ts-expect-error timeouts are numbers
createPostgresStorage('postgres://localhost/db', { timeoutMs: '10s' });
// @ts-expect-error the idle time is a number of milliseconds
createPostgresStorage('postgres://localhost/db', { idleTimeoutMs: '10s' });
