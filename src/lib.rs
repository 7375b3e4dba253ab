//! The napi binding of `@noetic-tools/core`: converts JS values and dispatches calls into `noetic-runtime`.
