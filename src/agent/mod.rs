//! The agent layer: the messages an agent keeps in its history.

mod message;

pub use message::{AgentMessage, CustomMessage, CustomMessageType};
