//! The napi binding of `@noetic-tools/core`: converts JS values and dispatches calls into `noetic-runtime`, and
//! decides nothing. The JS side (`js/`) holds user values and calls user functions; this crate reaches it through
//! one dispatcher function per harness (see `dispatcher.rs`).

// napi registers the exports only outside `cfg(test)`, so a test build of this crate sees them as unused.
#![cfg_attr(test, allow(dead_code))]

mod builtin;
mod channels;
mod describe;
mod dispatcher;
mod driver;
mod embed;
mod errors;
mod fs;
mod guard;
mod harness;
mod inspector;
mod js_callback;
mod js_host;
mod js_string;
mod options;
mod otel;
mod protocol;
mod session;
mod storage;
mod store_reader;
mod subprocess;
mod unstable;
mod usage_shelf;
mod weak_runtime;
mod workflow;

use napi_derive::napi;

/// A faster allocator than the system's: each hook batch and model step makes and drops many small strings, items
/// and maps, and glibc's malloc and free were the largest native cost of a turn after the work itself. mimalloc, as
/// rolldown and oxc use, except on x86-64 Linux, where jemalloc served a loaded process's cold blocks faster
/// (DECISIONS S21); other targets keep mimalloc, whose build needs nothing of the target's page size.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Replaces the default panic output with one that says whose bug it is (napi-rs turns the panic into a JS error
/// at the boundary, so the Node process keeps running, A5), and gives the runtime one worker thread.
///
/// One worker because the runtime's own work is small next to the JS it waits on, and because work started from
/// JS then begins in the order JS started it: two sessions' turns reach their first request to JS in the order of
/// their `execute` calls, as upstream's do on its single thread. (The blocking pool, SQLite's, is separate.)
#[napi(module_exports, skip_typescript)]
pub fn init() {
  dispatcher::mark_js_thread();
  std::panic::set_hook(Box::new(|info| {
    eprintln!("@noetic-tools/core panicked: {info}. This is a bug in @noetic-tools/core, not in your code.");
  }));
  if let Ok(runtime) = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
    napi::bindgen_prelude::create_custom_tokio_runtime(runtime);
  }
}
