//! The faux provider (split into submodules in the next commit).

mod provider;

pub use provider::*;
