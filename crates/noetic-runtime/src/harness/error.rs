//! Why a run failed. Each variant keeps what JS needs to throw the right error: a config error with its code and
//! hint, a NoeticError with its kind, or the very object a user function threw.

use crate::error::{ConfigError, NoeticError};
use crate::host::HostError;
use crate::memory::lifecycle::InitFailure;

#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
  Config(ConfigError),
  Noetic(NoeticError),
  Host(HostError),
}

impl std::fmt::Display for RunError {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self {
      Self::Config(error) => error.fmt(f),
      Self::Noetic(error) => error.fmt(f),
      Self::Host(error) => error.fmt(f),
    }
  }
}

impl std::error::Error for RunError {}

impl From<ConfigError> for RunError {
  fn from(error: ConfigError) -> Self {
    Self::Config(error)
  }
}

impl From<NoeticError> for RunError {
  fn from(error: NoeticError) -> Self {
    Self::Noetic(error)
  }
}

impl From<HostError> for RunError {
  fn from(error: HostError) -> Self {
    match error {
      HostError::Config(error) => Self::Config(error),
      HostError::Noetic(error) => Self::Noetic(error),
      other => Self::Host(other),
    }
  }
}

impl From<InitFailure> for RunError {
  fn from(failure: InitFailure) -> Self {
    // As upstream, the error init threw propagates unwrapped.
    Self::Host(HostError::Thrown { message: failure.message, error: failure.error })
  }
}

pub type RunResult<T> = Result<T, RunError>;
