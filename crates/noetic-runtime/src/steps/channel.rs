//! A channel as the store is asked about it: by a loop's inbox, an `every`'s `wakeOn`, or the host's calls.

/// A JS value as a `Map` keys it: a string as itself, any other value by identity, as a number the host gave it.
/// Channel names and execution ids are keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostKey {
  Text(String),
  Other(u32),
}

/// How a channel delivers. Any mode but `value` and `queue` behaves as a topic, as upstream's store treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelMode {
  Value,
  Queue,
  Topic,
}

impl ChannelMode {
  pub fn parse(mode: Option<&str>) -> Self {
    match mode {
      Some("value") => Self::Value,
      Some("queue") => Self::Queue,
      _ => Self::Topic,
    }
  }
}

/// A channel object as it names its channel and as its state is made when the store first sees the name.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelSpec {
  pub name: HostKey,
  /// The name as messages print it, for a name that is not a string (`String(name)`).
  pub label: Option<String>,
  pub mode: ChannelMode,
  /// As given (JS's number for it); none for the default.
  pub capacity: Option<f64>,
}

impl ChannelSpec {
  /// A channel named by a string.
  pub fn named(name: &str, mode: ChannelMode, capacity: Option<f64>) -> Self {
    Self { name: HostKey::Text(name.to_owned()), label: None, mode, capacity }
  }

  /// The name as a message prints it.
  pub fn label(&self) -> &str {
    match &self.name {
      HostKey::Text(name) => name,
      HostKey::Other(_) => self.label.as_deref().unwrap_or_default(),
    }
  }
}
