// Error classes, guards and the NoeticError union.

import {
  NoeticConfigError,
  NoeticErrorImpl,
  isNoeticConfigError,
  isNoeticError,
  type NoeticError,
} from '@noetic-tools/core';

const configError = new NoeticConfigError({
  code: 'EMPTY_STEP_ID',
  message: 'step.run() requires a non-empty id.',
  hint: 'Pass a unique id.',
});
const asError: Error = configError;
const code: string = configError.code;
const hint: string = configError.hint;
const docsUrl: string | undefined = configError.docsUrl;
void [asError, code, hint, docsUrl];

new NoeticConfigError({ code: 'X', message: 'm', hint: 'h', docsUrl: 'https://example.com' });

const runtimeError = new NoeticErrorImpl({ kind: 'budget_exceeded', field: 'cost', limit: 1, actual: 2 });
const name: string = runtimeError.name;
void name;

function explain(e: unknown): string {
  if (isNoeticConfigError(e)) return `${e.code}: ${e.hint}`;
  if (isNoeticError(e)) {
    const inner: NoeticError = e.noeticError;
    switch (inner.kind) {
      case 'step_failed':
        return `${inner.stepId}: ${inner.cause.message} (exhausted: ${inner.retriesExhausted})`;
      case 'llm_parse_error':
        return `${inner.raw} ${inner.zodError.issues.length}`;
      case 'fork_partial':
        return `${inner.succeeded.length}/${inner.failed.map((f) => f.error.kind).join(',')}`;
      case 'budget_exceeded':
        return `${inner.field} ${inner.limit} < ${inner.actual}`;
      case 'item_schema_mismatch':
        return `${inner.category} ${inner.itemType ?? ''}`;
      case 'handle_evicted':
        return `${inner.handleId} after ${inner.gracePeriodMs}`;
      case 'cancelled':
        return inner.reason ?? 'cancelled';
      case 'llm_refused':
      case 'llm_rate_limit':
      case 'channel_timeout':
      case 'channel_closed':
      case 'steering_denied':
        return inner.kind;
      default: {
        const exhaustive: never = inner;
        return exhaustive;
      }
    }
  }
  return String(e);
}
void explain;

// -----------------------------------------------------------------------------
// Negative checks
// -----------------------------------------------------------------------------

// @ts-expect-error hint is required
new NoeticConfigError({ code: 'X', message: 'm' });

// @ts-expect-error unknown error kind
new NoeticErrorImpl({ kind: 'oops' });

// @ts-expect-error budget_exceeded needs field, limit and actual
new NoeticErrorImpl({ kind: 'budget_exceeded', field: 'cost' });

function readOnly(e: NoeticConfigError): void {
  // @ts-expect-error code is read-only
  e.code = 'OTHER';
}
void readOnly;
