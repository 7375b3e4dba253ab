//! An update message: one developer message, placed in the history where the change was seen, that tells the model
//! how pinned layers changed since the anchor it still sees was sent. Its wording is fixed, so the same changes are
//! the same bytes.

use std::sync::Arc;

use crate::items::{Item, collect_input_text};

/// One pinned layer's change since its pin.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
  /// Its output now reads `text` (the anchor still shows the old one).
  Replace { layer_id: String, text: String },
  /// It has nothing to say any more.
  Retract { layer_id: String },
  /// It began to recall after the epoch was anchored.
  Add { layer_id: String, text: String },
}

impl Change {
  pub fn replace(layer_id: &str, items: &[Arc<Item>]) -> Self {
    Self::Replace { layer_id: layer_id.to_owned(), text: text_of(items) }
  }

  pub fn retract(layer_id: &str) -> Self {
    Self::Retract { layer_id: layer_id.to_owned() }
  }

  pub fn add(layer_id: &str, items: &[Arc<Item>]) -> Self {
    Self::Add { layer_id: layer_id.to_owned(), text: text_of(items) }
  }

  /// A layer's own wording of its change (its `renderDelta`'s text), in place of the full text of a replace.
  pub fn reword(&mut self, own: String) {
    if let Self::Replace { text, .. } = self {
      *text = own;
    }
  }

  fn write(&self, out: &mut String) {
    match self {
      Self::Replace { layer_id, text } => {
        out.push_str(&format!("<update layer=\"{layer_id}\" action=\"replace\">\n{text}\n</update>\n"))
      }
      Self::Retract { layer_id } => out.push_str(&format!("<update layer=\"{layer_id}\" action=\"retract\"/>\n")),
      Self::Add { layer_id, text } => {
        out.push_str(&format!("<update layer=\"{layer_id}\" action=\"add\">\n{text}\n</update>\n"))
      }
    }
  }
}

/// A layer's items as the model reads them: each message's text, any other item as its JSON.
fn text_of(items: &[Arc<Item>]) -> String {
  let mut texts = Vec::with_capacity(items.len());
  for item in items {
    let fields = item.fields();
    let said = collect_input_text(&[&*fields]);
    if said.is_empty() {
      texts.push(item.json_text().to_owned());
    } else {
      texts.extend(said);
    }
  }
  texts.join("\n")
}

/// The update message that carries `changes`, to stand before the log item at `at`; `None` when there are none.
/// Its id is derived from its place and text, so the same update is the same bytes.
pub fn changes_message(changes: &[Change], at: usize) -> Option<Item> {
  if changes.is_empty() {
    return None;
  }
  let mut text = String::from(
    "<context-updates>\nContext blocks named below changed since they were first sent; where they differ, the \
     latest update is current.\n",
  );
  for change in changes {
    change.write(&mut text);
  }
  text.push_str("</context-updates>");
  let id = format!("context-updates-{at}-{:016x}", super::text_hash(&text));
  crate::items::create_message_with_id(id, text, "developer").ok()
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::items::input_message;

  fn items(text: &str) -> Vec<Arc<Item>> {
    vec![Arc::new(input_message("m1", "developer", text))]
  }

  #[test]
  fn the_message_names_each_change_and_is_the_same_bytes_for_the_same_changes() {
    let changes = vec![
      Change::replace("clock", &items("It is 10:05.")),
      Change::retract("notes"),
      Change::add("profile", &items("Name: Ada")),
    ];
    let message = changes_message(&changes, 7).expect("a message");
    let again = changes_message(&changes.clone(), 7).expect("a message");
    assert_eq!(message.json_text(), again.json_text());
    assert_eq!(message.role(), Some("developer"));
    let text = collect_input_text(&[&*message.fields()]).join("");
    assert!(text.contains("<update layer=\"clock\" action=\"replace\">\nIt is 10:05.\n</update>"), "{text}");
    assert!(text.contains("<update layer=\"notes\" action=\"retract\"/>"));
    assert!(text.contains("<update layer=\"profile\" action=\"add\">\nName: Ada\n</update>"));
    assert!(changes_message(&[], 7).is_none());
  }
}
