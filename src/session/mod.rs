//! The session layer: pi-compatible JSONL session trees.
//!
//! A session is a file of JSON lines in pi's format (version 3): a [`SessionHeader`], then
//! [`SessionEntry`]s — messages, model and thinking-level changes, compactions, branch
//! summaries, extension state, labels, names — each with an 8-hex `id` and the `parentId`
//! of the entry it follows. The entries form a tree; the *leaf* is where the conversation
//! continues. [`SessionManager`] appends to the tree, moves the leaf, forks, and builds the
//! [`SessionContext`] an agent resumes from. Files written by pi open here, and files written
//! here open in pi with the same context.
//!
//! ```
//! use pi_engine::session::{SessionManager, SessionOptions};
//! use pi_engine::{AssistantMessage, AssistantContent, UserMessage};
//!
//! let dir = std::env::temp_dir().join(format!("pi-session-doc-{}", std::process::id()));
//! let mut sm = SessionOptions::new().with_session_dir(&dir).create("/home/me/project");
//! sm.append_message(UserMessage::text("Hello")).unwrap();
//! sm.append_message(
//!     AssistantMessage::new("anthropic-messages", "anthropic", "claude-sonnet-4-5")
//!         .with_content(vec![AssistantContent::text("Hi!")]),
//! ).unwrap();
//! let path = sm.session_file().unwrap().to_owned();
//! drop(sm);
//!
//! // Later: resume where it left off.
//! let sm = SessionManager::open(&path).unwrap();
//! let context = sm.build_session_context().unwrap();
//! assert_eq!(context.messages.len(), 2);
//! assert_eq!(SessionOptions::new().with_session_dir(&dir).list("/home/me/project").unwrap().len(), 1);
//! # std::fs::remove_dir_all(&dir).ok();
//! ```
//!
//! ## Files
//!
//! Sessions live in `~/.pi/agent/sessions/--<cwd>--/<timestamp>_<uuid>.jsonl` (the cwd with
//! `/`, `\` and `:` replaced by `-`), as pi keeps them; [`SessionOptions`] overrides the
//! directories.
//!
//! * **Durable.** The file is append-only: each append writes one whole line and returns
//!   once the operating system has it ([`FsyncPolicy::Always`] also survives power loss).
//!   A torn or corrupt line (a crash mid-write, a bad edit) is skipped with a warning when
//!   the file is read, and the next append starts on a fresh line, so the file stays valid
//!   and nothing in it is rewritten. With [`FsyncPolicy::Always`] a failed sync fails the
//!   append ([`SessionError::Sync`]) and takes its line back out of the file.
//! * **One writer.** A writer holds an advisory lock on its file; a second one — in another
//!   process or this one — gets [`SessionError::Locked`] instead of interleaving lines.
//! * **Off the executor.** Every append goes through the session's [`SessionWriter`]: for a
//!   file ([`JsonlFileWriter`]) a queue written in order by a thread of tokio's blocking
//!   pool, for memory ([`MemoryWriter`]) at once. [`AgentSession`](crate::agent_session::AgentSession)
//!   awaits its writes, so neither the `write` nor the `fdatasync` holds up an async worker
//!   thread; the synchronous `append_*` methods of [`SessionManager`] block their caller
//!   until the entry is durable, as before. [`SessionOptions::open_async`] and
//!   [`SessionOptions::open_with_context_async`] read and index a file on the blocking pool.
//! * **Old formats.** Version 1 and 2 files (pi's legacy formats) are migrated as pi does
//!   it (ids and parent links for v1, `firstKeptEntryIndex` → `firstKeptEntryId`,
//!   `hookMessage` → `custom`), but with deterministic ids, and without touching the file
//!   until the first append — which first copies the original to `<file>.v<N>.bak`.
//! * **Torn header.** A file whose header line is torn but whose entries are valid opens with
//!   a header made in memory (the session id from the file name) and a warning; the first
//!   append backs it up to `<file>.header.bak` and rewrites it with that header.
//! * **Interrupted rewrites.** A rewrite (migration, header repair) writes `<file>.migrating`
//!   and renames it over the file; what a crash leaves of it is removed at the next writable
//!   open, and a backup of identical content is reused rather than added again.
//! * **Bounded lines.** A line may be at most 256 MiB
//!   ([`SessionOptions::with_max_line_bytes`]): a longer entry is refused at write
//!   ([`SessionError::EntryTooLarge`]), a longer line in a file is skipped with a warning
//!   without being read into memory.
//! * **Any depth.** Lines are read without serde_json's nesting limit of 128 (the stack grows
//!   on the heap for a deeper value), so whatever is written reads back. An indexed entry
//!   whose line does not parse as a whole is [`SessionError::UnreadableEntry`], left out of
//!   the context with a warning.
//! * **Large sessions.** Only an index (id, parent, type, timestamp, byte offset per entry)
//!   is kept in memory; bodies are parsed when asked for, and building the context reads
//!   only the entries it returns.
//!
//! ## Where this differs from pi 0.73.1, on purpose
//!
//! The context, leaf, labels, names and tree are pi's on every file pi's own goldens cover
//! (including its quirks: labels and names resolve over the whole file whatever the branch;
//! an empty branch summary is left out; the branch summary's `</summary>` has no line break
//! before it; bash output is not trimmed; an orphan is a root). What differs:
//!
//! * entries are written as they are appended; pi holds them back until the first assistant
//!   message, so a crash before the first reply loses the prompt there;
//! * a file with content but no session header is an error ([`SessionError::NotASession`]);
//!   pi truncates it and starts over;
//! * a header version above 3 is an error ([`SessionError::UnsupportedVersion`]); pi reads
//!   on as if it were version 3;
//! * old files get deterministic ids and are rewritten only at the first append, after a
//!   backup; pi draws random ids and rewrites the file on every open;
//! * a cycle in the parent links stops the walk with a warning; pi loops forever;
//! * a torn header is replaced by one made in memory; pi starts such a file over;
//! * a line over the bound is refused or skipped; pi reads the file whole, whatever its size;
//! * [`SessionInfo`] has no `allMessagesText` (pi's listings hold every message's text).
//!
//! ## Compaction
//!
//! [`compaction`] is pi's compaction and branch summarization, to the token: the context-size
//! estimate, the cut point, what is summarized, pi's prompts, the file lists. It is what
//! [`AgentSession`](crate::agent_session::AgentSession) runs automatically.
//!
//! ## HTML export
//!
//! With the feature `export-html`, [`export_html`] renders a session — its whole tree, the
//! active path shown — as one self-contained HTML page (pi's `--export`).
//!
//! ## Messages
//!
//! The session layer's roles — `bashExecution`, `custom`, `compactionSummary`,
//! `branchSummary` — are typed custom messages of the agent layer
//! ([`BashExecutionMessage`], [`ExtensionMessage`], [`CompactionSummaryMessage`],
//! [`BranchSummaryMessage`]); [`convert_to_llm`] gives the model pi's exact texts for them.

pub mod compaction;
mod context;
mod entry;
mod error;
#[cfg(feature = "export-html")]
#[cfg_attr(docsrs, doc(cfg(feature = "export-html")))]
pub mod export_html;
mod index;
mod list;
mod manager;
mod messages;
mod migrate;
mod read;
mod scan;
mod store;
mod time;
mod tree;
mod writer;

pub use context::SessionContext;
pub use entry::{
    BranchSummaryEntry, CURRENT_SESSION_VERSION, CompactionEntry, CustomEntry, CustomMessageEntry,
    EntryType, LabelEntry, MessageEntry, ModelChangeEntry, ModelRef, SessionEntry, SessionHeader,
    SessionInfoEntry, ThinkingLevelChangeEntry, UnknownEntry,
};
pub use error::{Result, SessionError};
pub use list::SessionInfo;
pub use manager::{ENV_AGENT_DIR, NewSession, SessionManager, SessionOptions};
pub use messages::{
    BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, BashExecutionMessage, BranchSummaryMessage,
    COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX, CompactionSummaryMessage,
    ExtensionMessage, convert_to_llm, to_llm,
};
#[doc(hidden)]
pub use read::parse_line;
pub use store::FsyncPolicy;
#[doc(hidden)]
pub use store::SyncHook;
pub use tree::{SessionTree, TreeNode};
pub use writer::{JsonlFileWriter, LineSpan, MemoryWriter, SessionWriter};
