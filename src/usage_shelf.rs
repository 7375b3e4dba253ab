//! Session responses whose `lastLayerUsage` JS may still read: kept by key until read or until JS collects the
//! response (see `toResponse` in js/session.cjs).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use noetic_runtime::harness::session::TurnResponse;

/// Responses whose `lastLayerUsage` may still be read, by key. The usage carries every recalled item, so it is
/// written out only if JS reads it (most never are), and let go once read or once JS collects the response.
#[derive(Clone, Default)]
pub(crate) struct UsageShelf(Arc<Mutex<Shelf>>);

#[derive(Default)]
struct Shelf {
  next: u32,
  kept: HashMap<u32, Arc<TurnResponse>>,
}

impl UsageShelf {
  pub(crate) fn put(&self, response: &Arc<TurnResponse>) -> u32 {
    let mut shelf = self.0.lock().unwrap_or_else(PoisonError::into_inner);
    shelf.next = shelf.next.wrapping_add(1);
    let key = shelf.next;
    shelf.kept.insert(key, Arc::clone(response));
    key
  }

  pub(crate) fn take(&self, key: u32) -> Option<Arc<TurnResponse>> {
    self.0.lock().unwrap_or_else(PoisonError::into_inner).kept.remove(&key)
  }

  /// Lets go of the responses under `keys`; they are freed after the lock is released, as `take`'s are.
  pub(crate) fn take_all(&self, keys: &[u32]) {
    let taken: Vec<_> = {
      let mut shelf = self.0.lock().unwrap_or_else(PoisonError::into_inner);
      keys.iter().filter_map(|key| shelf.kept.remove(key)).collect()
    };
    drop(taken);
  }
}
