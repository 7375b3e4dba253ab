//! Scope keys (§4); the storage keys of a layer's scoped storage are the storage's own (`storage::scoped`).
//!
//! Nothing is escaped: a layer `a/b` in scope `c` and a layer `a` in scope `b/c` share `layers/a/b/c/`, as
//! upstream. Keys must stay byte-identical to upstream's so existing stores rehydrate.

use super::layer::Scope;
#[cfg(test)]
use crate::storage::{scoped_key, scoped_list_prefix, scoped_prefix, unscope_listed_key};

/// The scope key of every `global` layer.
pub const GLOBAL_SCOPE_KEY: &str = "__global__";

/// The key, under a layer's scoped prefix, where its durable state lives.
pub const STATE_KEY: &str = "state";

/// Which partition of storage a layer's state belongs to in this execution. A `resource` layer falls back to the
/// thread only when there is no resource id; an empty resource id is a key of its own. Borrowed: it is looked up
/// for every durable layer at every execution, mostly only to be joined into a storage key.
pub fn resolve_scope_key<'a>(
  scope: Scope,
  thread_id: &'a str,
  resource_id: Option<&'a str>,
  execution_id: &'a str,
) -> &'a str {
  match scope {
    Scope::Thread => thread_id,
    Scope::Resource => resource_id.unwrap_or(thread_id),
    Scope::Global => GLOBAL_SCOPE_KEY,
    Scope::Execution => execution_id,
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn scope_keys() {
    let key = |scope, resource| resolve_scope_key(scope, "T", resource, "E");
    assert_eq!(key(Scope::Thread, None), "T");
    assert_eq!(key(Scope::Resource, None), "T");
    assert_eq!(key(Scope::Global, None), "__global__");
    assert_eq!(key(Scope::Execution, None), "E");
    assert_eq!(key(Scope::Resource, Some("")), "");
    assert_eq!(key(Scope::Resource, Some("R")), "R");
    assert_eq!(key(Scope::Thread, Some("R")), "T");
  }

  #[test]
  fn scoped_storage_keys_for_layer_w_in_thread_t() {
    let prefix = scoped_prefix("w", "T");
    assert_eq!(prefix, "layers/w/T/");
    assert_eq!(scoped_key("w", "T", STATE_KEY), "layers/w/T/state");
    assert_eq!(scoped_list_prefix(&prefix, None), "layers/w/T/");
    assert_eq!(scoped_list_prefix(&prefix, Some("")), "layers/w/T/");
    assert_eq!(scoped_list_prefix(&prefix, Some("sub/")), "layers/w/T/sub/");

    // Only the layer/scope prefix is removed; foreign keys come back unchanged.
    assert_eq!(unscope_listed_key(&prefix, "layers/w/T/sub/a"), "sub/a");
    assert_eq!(unscope_listed_key(&prefix, "layers/w/T/state"), "state");
    assert_eq!(unscope_listed_key(&prefix, "layers/x/T/state"), "layers/x/T/state");
    assert_eq!(unscope_listed_key(&prefix, "other"), "other");
  }

  #[test]
  fn unescaped_ids_can_share_a_prefix() {
    assert_eq!(scoped_prefix("a/b", "c"), scoped_prefix("a", "b/c"));
  }
}
