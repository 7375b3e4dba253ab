//! The history a projectHistory stage reads (§11.1): the context's log itself, or the list an earlier stage made
//! of log positions and new items. A stage that keeps a window reads only the items it keeps.

use std::sync::Arc;

use crate::items::{Item, ItemLog};

/// One item of a projected history: the log's item at a position, or one a hook made.
#[derive(Debug, Clone)]
pub enum Projected {
  Log(usize),
  Made(Arc<Item>),
}

/// What a projection stage is given.
#[derive(Debug, Clone, Copy)]
pub enum History<'a> {
  /// Nothing has projected yet: the log is the history.
  Log(&'a ItemLog),
  /// An earlier stage's result; its `Log` entries are positions in `log`.
  List { entries: &'a [Projected], log: &'a ItemLog },
}

impl<'a> History<'a> {
  pub fn len(&self) -> usize {
    match self {
      History::Log(log) => log.len(),
      History::List { entries, .. } => entries.len(),
    }
  }

  pub fn is_empty(&self) -> bool {
    self.len() == 0
  }

  /// The item at index `i` of this history.
  pub fn item(&self, i: usize) -> Option<&'a Arc<Item>> {
    match self {
      History::Log(log) => log.get(i),
      History::List { entries, log } => match entries.get(i)? {
        Projected::Log(pos) => log.get(*pos),
        Projected::Made(item) => Some(item),
      },
    }
  }

  /// The entry a stage keeps for index `i`: the log position, or the item as it was given.
  pub fn entry(&self, i: usize) -> Projected {
    match self {
      History::Log(_) => Projected::Log(i),
      History::List { entries, .. } => entries[i].clone(),
    }
  }
}

/// Reads the context's log for a native stage, between awaits (the log lives behind the context's lock).
pub type LogReader<'a> = &'a (dyn Fn(&mut dyn FnMut(&ItemLog)) + Send + Sync);
