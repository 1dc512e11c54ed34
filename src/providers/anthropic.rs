//! Anthropic Messages (split into submodules in the next commit).

mod request;

pub use request::*;
