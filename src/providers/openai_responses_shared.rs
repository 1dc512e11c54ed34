//! The shared OpenAI Responses code (split into submodules in the next commit).

mod decode;

pub(crate) use decode::*;
