//! How an item takes part in tool-call pairing: the only thing orphan stripping needs to know about it.

use std::hash::Hash;

use rustc_hash::FxHashSet;

/// How an item takes part in pairing, by a key that stands for its call id: the id itself, or a number a log
/// gave it once, so that pairing compares numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pairing<K> {
  Unlinked,
  Call(K),
  Output(K),
}

/// How far after a call its output is looked for first: a model's calls are answered right after them.
const NEAR: usize = 16;
/// Past this many items the quick pairing leaves undecided, the rest are decided with sets rather than by scanning.
const FEW: usize = 32;

/// Which of `links` survive `stripUnresolvedToolCalls`: a call survives when some output in the list has its call
/// id, an output when some call does. Pairing is by membership only; position and count are ignored.
///
/// Runs every model step over the kept history, so the usual shape is decided without hashing: each call is paired
/// with a matching output shortly after it; what that leaves (a pair cut by the window, an output before its call)
/// is decided by membership over the whole list.
pub fn strip_unresolved_mask<K: Copy + Eq + Hash>(links: &[Pairing<K>]) -> Vec<bool> {
  let mut keep: Vec<bool> = links.iter().map(|link| matches!(link, Pairing::Unlinked)).collect();
  for (i, link) in links.iter().enumerate() {
    let Pairing::Call(id) = *link else { continue };
    let near = (i + 1..links.len().min(i + 1 + NEAR)).find(|&j| !keep[j] && links[j] == Pairing::Output(id));
    if let Some(j) = near {
      keep[i] = true;
      keep[j] = true;
    }
  }
  let undecided: Vec<usize> = (0..links.len()).filter(|&i| !keep[i]).collect();
  if undecided.len() > FEW {
    return by_membership(links);
  }
  for i in undecided {
    keep[i] = match links[i] {
      Pairing::Call(id) => links.contains(&Pairing::Output(id)),
      Pairing::Output(id) => links.contains(&Pairing::Call(id)),
      Pairing::Unlinked => true,
    };
  }
  keep
}

fn by_membership<K: Copy + Eq + Hash>(links: &[Pairing<K>]) -> Vec<bool> {
  let mut calls = FxHashSet::default();
  let mut outputs = FxHashSet::default();
  for link in links {
    match *link {
      Pairing::Call(id) => {
        calls.insert(id);
      }
      Pairing::Output(id) => {
        outputs.insert(id);
      }
      Pairing::Unlinked => {}
    }
  }
  links
    .iter()
    .map(|link| match link {
      Pairing::Call(id) => outputs.contains(id),
      Pairing::Output(id) => calls.contains(id),
      Pairing::Unlinked => true,
    })
    .collect()
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn drops_calls_without_outputs_and_outputs_without_calls() {
    // [output(x), user, call(y), call(z), output(z)] keeps [user, call(z), output(z)].
    let pairs = [Pairing::Output("x"), Pairing::Unlinked, Pairing::Call("y"), Pairing::Call("z"), Pairing::Output("z")];
    assert_eq!(strip_unresolved_mask(&pairs), vec![false, true, false, true, true]);
  }

  /// The quick pairing and the membership rule agree on every arrangement: outputs before calls, duplicates, pairs
  /// far apart, and more undecided items than the scan takes.
  #[test]
  fn quick_pairing_matches_membership() {
    let (call, output) = (Pairing::Call, Pairing::Output);
    let mut far = vec![call("far".to_owned())];
    far.extend((0..40).map(|_| Pairing::Unlinked));
    far.push(output("far".to_owned()));
    let mut many: Vec<_> = (0..50).map(|i| output(format!("o{i}"))).collect();
    many.extend((0..50).map(|i| call(format!("o{}", i * 2))));
    let cases = [
      vec![output("a".into()), call("a".into())],
      vec![call("a".into()), call("a".into()), output("a".into())],
      vec![call("a".into()), output("a".into()), output("a".into()), output("b".into())],
      vec![call("a".into()), call("b".into()), output("b".into()), output("a".into()), call("c".into())],
      far,
      many,
    ];
    for links in cases {
      let pairs: Vec<Pairing<&str>> = links
        .iter()
        .map(|link: &Pairing<String>| match link {
          Pairing::Call(id) => Pairing::Call(id.as_str()),
          Pairing::Output(id) => Pairing::Output(id.as_str()),
          Pairing::Unlinked => Pairing::Unlinked,
        })
        .collect();
      assert_eq!(strip_unresolved_mask(&pairs), by_membership(&pairs), "{links:?}");
    }
  }
}
