//! How an item takes part in tool-call pairing: the only thing orphan stripping needs to know about it.

use rustc_hash::FxHashSet;

/// A `function_call` or `function_call_output` names its call id; every other item is unlinked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolLink {
  #[default]
  None,
  Call(String),
  Output(String),
}

/// Which of `links` survive `stripUnresolvedToolCalls`: a call survives when some output in the list has its call
/// id, an output when some call does. Pairing is by membership only; position and count are ignored.
pub fn strip_unresolved_mask<'a, I>(links: I) -> Vec<bool>
where
  I: IntoIterator<Item = &'a ToolLink> + Clone,
{
  let mut calls = FxHashSet::default();
  let mut outputs = FxHashSet::default();
  for link in links.clone() {
    match link {
      ToolLink::Call(id) => {
        calls.insert(id.as_str());
      }
      ToolLink::Output(id) => {
        outputs.insert(id.as_str());
      }
      ToolLink::None => {}
    }
  }
  links
    .into_iter()
    .map(|link| match link {
      ToolLink::Call(id) => outputs.contains(id.as_str()),
      ToolLink::Output(id) => calls.contains(id.as_str()),
      ToolLink::None => true,
    })
    .collect()
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn drops_calls_without_outputs_and_outputs_without_calls() {
    // [output(x), user, call(y), call(z), output(z)] keeps [user, call(z), output(z)].
    let links = [
      ToolLink::Output("x".into()),
      ToolLink::None,
      ToolLink::Call("y".into()),
      ToolLink::Call("z".into()),
      ToolLink::Output("z".into()),
    ];
    assert_eq!(strip_unresolved_mask(links.iter()), vec![false, true, false, true, true]);
  }
}
