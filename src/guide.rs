//! Guides: how the crate is laid out and how each layer is used. The same pages are in the
//! repository's `docs/` folder; their examples are compiled and run as doc tests.

#[doc = include_str!("../docs/architecture.md")]
pub mod architecture {}

#[doc = include_str!("../docs/llm.md")]
pub mod llm {}

#[doc = include_str!("../docs/agent.md")]
pub mod agent {}

#[doc = include_str!("../docs/session.md")]
pub mod session {}

#[doc = include_str!("../docs/extensions.md")]
pub mod extensions {}

#[cfg(feature = "tools")]
#[doc = include_str!("../docs/tools.md")]
pub mod tools {}

#[doc = include_str!("../docs/extension-protocol.md")]
pub mod extension_protocol {}

#[cfg(feature = "cli")]
#[doc = include_str!("../docs/cli.md")]
pub mod cli {}
