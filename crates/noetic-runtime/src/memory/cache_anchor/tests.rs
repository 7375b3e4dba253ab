use super::*;
use crate::items::input_message;

const KEY: &str = "t:thread";

fn render(layer_id: &str, placement: Placement, text: Option<&str>, id: &str) -> LayerRender {
  LayerRender {
    layer_id: layer_id.into(),
    slot: 100.0,
    placement,
    items: text.map(|text| vec![Arc::new(input_message(id, "developer", text))]).unwrap_or_default(),
    host_key: None,
    token_count: None,
    render_delta: false,
  }
}

fn assemble(store: &mut CacheStore, config: &CacheConfig, renders: Vec<LayerRender>) -> Assembly {
  store.assemble(KEY, 7, renders, (0, 2000.0), config, &|item: &Item| item.cost())
}

fn texts(served: &[Served]) -> Vec<String> {
  served
    .iter()
    .flat_map(|s| &s.items)
    .map(|item| crate::items::collect_input_text(&[&*item.fields()]).join(""))
    .collect()
}

#[test]
fn a_pinned_layer_replays_its_first_render_and_its_change_goes_to_the_changes() {
  let config = CacheConfig::default();
  let mut store = CacheStore::default();
  let first = assemble(&mut store, &config, vec![render("rules", Placement::Anchor, Some("Be brief."), "a")]);
  assert_eq!(first.epoch.reanchor_reason, Some(ReanchorReason::ColdStart));
  assert_eq!(first.epoch.age, 1);
  let pinned_item = Arc::clone(&first.anchor[0].items[0]);

  // The same words under a new id: nothing changed, and the very pinned item is served.
  let second = assemble(&mut store, &config, vec![render("rules", Placement::Anchor, Some("Be brief."), "b")]);
  assert!(Arc::ptr_eq(&second.anchor[0].items[0], &pinned_item));
  assert!(second.anchor[0].pinned && !second.anchor[0].changed);
  assert!(second.changes.is_empty());
  assert_eq!(second.epoch.reanchor_reason, None);

  // New words: the anchor still shows the pin; the change is a replace.
  let third = assemble(&mut store, &config, vec![render("rules", Placement::Anchor, Some("Be thorough."), "c")]);
  assert!(Arc::ptr_eq(&third.anchor[0].items[0], &pinned_item));
  assert!(third.anchor[0].changed);
  assert_eq!(third.changes, vec![Change::Replace { layer_id: "rules".into(), text: "Be thorough.".into() }]);

  // Nothing at all: a retract, the pin still in place.
  let fourth = assemble(&mut store, &config, vec![render("rules", Placement::Anchor, None, "d")]);
  assert_eq!(texts(&fourth.anchor), vec!["Be brief."]);
  assert_eq!(fourth.changes, vec![Change::Retract { layer_id: "rules".into() }]);
}

#[test]
fn live_layers_render_fresh_after_the_history_and_late_layers_are_added_as_changes() {
  let config = CacheConfig::default();
  let mut store = CacheStore::default();
  let renders = |clock: &str, notes: Option<&str>| {
    vec![
      render("rules", Placement::Anchor, Some("Be brief."), "r"),
      render("clock", Placement::Live, Some(clock), "c"),
      render("notes", Placement::Auto, notes, "n"),
    ]
  };
  let first = assemble(&mut store, &config, renders("10:00", None));
  assert_eq!(texts(&first.live), vec!["10:00"]);
  let second = assemble(&mut store, &config, renders("10:01", Some("Ada likes tea.")));
  assert_eq!(texts(&second.anchor), vec!["Be brief."]);
  assert_eq!(texts(&second.live), vec!["10:01"]);
  assert_eq!(second.changes, vec![Change::Add { layer_id: "notes".into(), text: "Ada likes tea.".into() }]);
}

#[test]
fn epochs_end_with_age_with_new_instructions_and_when_the_changes_outgrow_their_share() {
  let config = CacheConfig { max_epoch_assemblies: 3, ..CacheConfig::default() };
  let mut store = CacheStore::default();
  let big = "word ".repeat(400);
  let rules = |text: &str| {
    vec![render("rules", Placement::Anchor, Some(&big), "r"), render("x", Placement::Anchor, Some(text), "x")]
  };
  let reasons: Vec<_> = (0..4).map(|_| assemble(&mut store, &config, rules("same")).epoch.reanchor_reason).collect();
  assert_eq!(reasons, vec![Some(ReanchorReason::ColdStart), None, None, Some(ReanchorReason::MaxAge)]);

  let other = store.assemble(KEY, 8, rules("same"), (0, 2000.0), &config, &|item: &Item| item.cost());
  assert_eq!(other.epoch.reanchor_reason, Some(ReanchorReason::InstructionsChanged));

  // A change as large as the anchor itself is not sent as a change: the epoch begins again, with it pinned.
  let grown = format!("{big}{big}");
  let overflow = store.assemble(KEY, 8, rules(&grown), (0, 2000.0), &config, &|item: &Item| item.cost());
  assert_eq!(overflow.epoch.reanchor_reason, Some(ReanchorReason::DeltaOverflow));
  assert!(overflow.changes.is_empty());
  assert_eq!(texts(&overflow.anchor)[1], grown);
}

#[test]
fn an_auto_layer_that_churns_moves_live_and_comes_back_when_it_settles() {
  let config = CacheConfig { max_epoch_assemblies: 4, ..CacheConfig::default() };
  let mut store = CacheStore::default();
  let mut bands = Vec::new();
  for turn in 0..40 {
    // A clock for the first 16 assemblies, then still.
    let text = if turn < 16 { format!("tick {turn}") } else { "still".to_owned() };
    let assembly = assemble(&mut store, &config, vec![render("clock", Placement::Auto, Some(&text), "c")]);
    let band = if assembly.live.is_empty() { Band::Anchor } else { Band::Live };
    bands.push(band);
  }
  assert_eq!(bands[0], Band::Anchor, "an auto layer starts anchored");
  let demoted = bands.iter().position(|band| *band == Band::Live).expect("the clock was demoted");
  assert!(demoted <= 8, "demoted at the first boundary after enough samples, was {demoted}");
  assert_eq!(*bands.last().unwrap(), Band::Anchor, "back in the anchor once it settled: {bands:?}");
}

#[test]
fn a_provider_that_reports_no_cached_tokens_is_not_judged_again() {
  let config = CacheConfig::default();
  let mut store = CacheStore::default();
  let rules = || vec![render("rules", Placement::Anchor, Some("Be brief."), "r")];
  assemble(&mut store, &config, rules());
  assemble(&mut store, &config, rules());
  store.note_outcome(KEY, None, None, 500.0, &config);
  assert!(store.cache_blind(KEY));
  store.note_outcome(KEY, Some(0.0), None, 500.0, &config);
  assert_eq!(assemble(&mut store, &config, rules()).epoch.reanchor_reason, None);
}

#[test]
fn a_reported_miss_re_anchors_and_three_in_a_row_stop_the_judging() {
  let config = CacheConfig::default();
  let mut store = CacheStore::default();
  let rules = || vec![render("rules", Placement::Anchor, Some("Be brief."), "r")];
  assemble(&mut store, &config, rules());
  // The first assembly writes the cache: its empty read is no miss.
  store.note_outcome(KEY, Some(0.0), None, 500.0, &config);
  assert_eq!(assemble(&mut store, &config, rules()).epoch.reanchor_reason, None);
  let mut reasons = Vec::new();
  for _ in 0..4 {
    store.note_outcome(KEY, Some(0.0), None, 500.0, &config);
    let assembly = assemble(&mut store, &config, rules());
    reasons.push(assembly.epoch.reanchor_reason);
    // Old enough to be judged.
    assemble(&mut store, &config, rules());
  }
  assert_eq!(reasons[0], Some(ReanchorReason::CacheMiss));
  assert!(store.cache_blind(KEY), "{reasons:?}");
  // A hit resets nothing once blind, and a hit before then counts as one.
  let mut fresh = CacheStore::default();
  assemble(&mut fresh, &config, rules());
  assemble(&mut fresh, &config, rules());
  fresh.note_outcome(KEY, Some(400.0), None, 500.0, &config);
  assert_eq!(assemble(&mut fresh, &config, rules()).epoch.reanchor_reason, None);
}

#[test]
fn the_repeated_start_is_measured_by_identity_and_lineages_are_bounded() {
  let config = CacheConfig::default();
  let mut store = CacheStore::default();
  assemble(&mut store, &config, vec![]);
  let item = |id: &str| Arc::new(input_message(id, "user", "hi"));
  let (a, b, c) = (item("a"), item("b"), item("c"));
  let same_words_as_b = item("b");
  let part = |item: &Arc<Item>, cost| Part::Item { at: Arc::as_ptr(item) as usize, cost };
  let mut repeated = |request| store.repeated_start(KEY, request, vec![], &|_| None, &|_, _| 0);
  assert_eq!(repeated(vec![part(&a, 10), part(&b, 20)]), 0);
  assert_eq!(repeated(vec![part(&a, 10), part(&b, 20), part(&c, 5)]), 30);
  assert_eq!(repeated(vec![part(&a, 10), part(&same_words_as_b, 20), part(&c, 5)]), 10);

  for i in 0..(MAX_LINEAGES + 10) {
    store.assemble(&format!("t:{i}"), 1, vec![], (0, 2000.0), &config, &|item: &Item| item.cost());
  }
  assert_eq!(store.lineages.len(), MAX_LINEAGES);
  assert!(!store.lineages.contains_key(KEY), "the least recently used went first");
}

#[test]
fn lineages_are_threads_at_the_top_and_executions_below() {
  assert_eq!(lineage_key(0, "th", "ex"), "t:th");
  assert_eq!(lineage_key(1, "th", "ex"), "x:ex");
}

#[test]
fn an_ended_execution_takes_its_lineage_with_it_and_a_thread_stays() {
  let config = CacheConfig::default();
  let mut store = CacheStore::default();
  let assemble_as = |store: &mut CacheStore, key: &str| {
    store.assemble(
      key,
      1,
      vec![render("rules", Placement::Anchor, Some("Be brief."), "r")],
      (0, 2000.0),
      &config,
      &|item: &Item| item.cost(),
    )
  };
  assemble_as(&mut store, &lineage_key(0, "th", "top"));
  assemble_as(&mut store, &lineage_key(1, "th", "child"));
  assert_eq!(store.lineages.len(), 2);
  store.forget_execution("child");
  // The top-level execution ending leaves its thread's epoch: the thread's next call continues it.
  store.forget_execution("top");
  assert_eq!(store.order.iter().collect::<Vec<_>>(), vec!["t:th"]);
  assert_eq!(assemble_as(&mut store, "t:th").epoch.reanchor_reason, None);
  assert_eq!(assemble_as(&mut store, "x:child").epoch.reanchor_reason, Some(ReanchorReason::ColdStart));
}

/// The text of an assembly's latest update message.
fn update_text(assembly: &Assembly) -> String {
  let update = assembly.updates.last().expect("an update");
  crate::items::collect_input_text(&[&*update.item.fields()]).join("")
}

#[test]
fn plan_asks_only_a_changed_pinned_layer_that_has_the_hook_and_publish_puts_its_text_in_the_update() {
  let config = CacheConfig::default();
  let mut store = CacheStore::default();
  let cost = |item: &Item| item.cost();
  let with_hook = |mut render: LayerRender| {
    render.render_delta = true;
    render
  };
  let renders = |files: &str, rules: &str, notes: Option<&str>| {
    vec![
      with_hook(render("files", Placement::Anchor, Some(files), "f")),
      render("rules", Placement::Anchor, Some(rules), "r"),
      with_hook(render("notes", Placement::Anchor, notes, "n")),
    ]
  };
  // The epoch's first assembly pins everything: nothing to word.
  let plan = store.plan(KEY, 7, renders("a.txt b.txt", "Be brief.", Some("tea")), (0, 2000.0), &config);
  assert!(plan.asks().is_empty());
  store.publish(plan, Vec::new(), &config, &cost);

  // files and rules changed, notes was retracted: only files (a replace, with the hook) is asked.
  let plan = store.plan(KEY, 7, renders("a.txt b.txt c.txt", "Be thorough.", None), (3, 2000.0), &config);
  assert_eq!(plan.asks().len(), 1);
  let ask = &plan.asks()[0];
  assert_eq!(ask.layer_id, "files");
  assert_eq!(texts_of(&ask.prev), vec!["a.txt b.txt"]);
  assert_eq!(texts_of(&ask.next), vec!["a.txt b.txt c.txt"]);
  let assembly = store.publish(plan, vec![Some("+ c.txt".into())], &config, &cost);
  let text = update_text(&assembly);
  assert!(text.contains("<update layer=\"files\" action=\"replace\">\n+ c.txt\n</update>"), "{text}");
  assert!(!text.contains("a.txt b.txt c.txt"), "the hook's text replaces the full text: {text}");
  assert!(text.contains("<update layer=\"rules\" action=\"replace\">\nBe thorough.\n</update>"), "{text}");
  assert!(text.contains("<update layer=\"notes\" action=\"retract\"/>"), "{text}");
  assert_eq!(assembly.updates[0].at, 3);
  // The anchor still shows the pins.
  assert_eq!(texts(&assembly.anchor), vec!["a.txt b.txt", "Be brief.", "tea"]);
}

#[test]
fn a_hook_that_gave_no_text_leaves_the_full_text_in_the_update() {
  let config = CacheConfig::default();
  let cost = |item: &Item| item.cost();
  for given in [None, Some(String::new())] {
    let mut store = CacheStore::default();
    let files = |text: &str| {
      let mut render = render("files", Placement::Anchor, Some(text), "f");
      render.render_delta = true;
      vec![render]
    };
    let plan = store.plan(KEY, 7, files("a.txt"), (0, 2000.0), &config);
    store.publish(plan, Vec::new(), &config, &cost);
    let plan = store.plan(KEY, 7, files("a.txt b.txt"), (1, 2000.0), &config);
    assert_eq!(plan.asks().len(), 1);
    let assembly = store.publish(plan, vec![given.clone()], &config, &cost);
    let text = update_text(&assembly);
    assert!(text.contains("<update layer=\"files\" action=\"replace\">\na.txt b.txt\n</update>"), "{given:?}: {text}");
    // What the model was told is the change, however worded: the same output again makes no new update.
    let plan = store.plan(KEY, 7, files("a.txt b.txt"), (2, 2000.0), &config);
    assert!(plan.asks().is_empty());
    assert_eq!(store.publish(plan, Vec::new(), &config, &cost).updates.len(), 1);
  }
}

fn texts_of(items: &[Arc<Item>]) -> Vec<String> {
  items.iter().map(|item| crate::items::collect_input_text(&[&*item.fields()]).join("")).collect()
}
