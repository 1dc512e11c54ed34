//! The in-memory index of a session: per entry its id, parent, type, timestamp and where its
//! line is — never its body. Labels and the session name are resolved while indexing, as pi
//! resolves them (over the whole file, in file order).
//!
//! This is what makes a 100 MB session cheap: pi keeps every entry parsed in memory; here an
//! entry costs a few dozen bytes until something asks for its body.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{self, Read};
use std::path::Path;

use super::entry::{CURRENT_SESSION_VERSION, EntryType, SessionHeader};
use super::error::{Result, SessionError};
use super::scan::{Head, LineScanner, is_blank, parse_head, parse_head_with_message, parse_value};
use super::time::iso_to_millis;
use crate::agent::AgentMessage;

/// Where an entry's line is in the store (without its `\n`).
pub(crate) use super::writer::LineSpan as Loc;

/// An entry's parent, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Parent {
    /// `parentId` null (or absent, or the entry's own id).
    Root,
    /// The node at this index.
    Node(u32),
    /// An id no entry has: the entry is an orphan (a root of the tree, as in pi).
    Missing(Box<str>),
}

/// The role class of a message entry, as far as the index needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    NotMessage,
    User,
    Assistant,
    Other,
}

#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) id: Box<str>,
    pub(crate) parent: Parent,
    pub(crate) entry_type: EntryType,
    pub(crate) role: Role,
    pub(crate) timestamp: Box<str>,
    pub(crate) ts_ms: Option<i64>,
    pub(crate) loc: Loc,
}

/// A label and when it was set; `seq` orders labels like pi's insertion-ordered `Map`.
#[derive(Debug, Clone)]
pub(crate) struct LabelState {
    pub(crate) label: String,
    pub(crate) timestamp: String,
    pub(crate) seq: u64,
}

/// The index of all entries of one session.
#[derive(Debug, Default, Clone)]
pub(crate) struct Index {
    pub(crate) nodes: Vec<Node>,
    pub(crate) by_id: HashMap<Box<str>, u32>,
    pub(crate) labels: HashMap<String, LabelState>,
    label_seq: u64,
    pub(crate) session_name: Option<String>,
    /// For version 1 files: position in pi's `fileEntries` (header = 0) → node. pi's
    /// `firstKeptEntryIndex` counts in these positions.
    pub(crate) v1_positions: Vec<Option<u32>>,
}

/// What loading a file produced.
pub(crate) struct Loaded {
    /// `None` for an empty (or whitespace-only) file.
    pub(crate) header: Option<SessionHeader>,
    pub(crate) index: Index,
    /// The header's version (1 when absent); entries of older versions are migrated on read.
    pub(crate) source_version: u64,
    /// False when the file does not end with `\n` (a torn last line): the next append must
    /// start on a fresh line.
    pub(crate) ends_with_newline: bool,
    /// With `decode`: per node, its decoded message (empty otherwise).
    pub(crate) messages: Vec<Option<Box<AgentMessage>>>,
    /// True when the header line is torn (not JSON) and `header` was made in memory: the
    /// file is to be repaired before the first append.
    pub(crate) header_made: bool,
}

impl Index {
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    pub(crate) fn get(&self, id: &str) -> Option<u32> {
        self.by_id.get(id).copied()
    }

    pub(crate) fn node(&self, idx: u32) -> &Node {
        &self.nodes[idx as usize]
    }

    /// The parent index of `idx`, when it exists.
    pub(crate) fn parent_of(&self, idx: u32) -> Option<u32> {
        match self.nodes[idx as usize].parent {
            Parent::Node(p) => Some(p),
            _ => None,
        }
    }

    /// The path from the root to `leaf` (inclusive). Stops at a cycle (which pi would follow
    /// forever) with a warning.
    pub(crate) fn path_to(&self, leaf: u32) -> Vec<u32> {
        let mut path = vec![leaf];
        let mut seen = vec![false; self.nodes.len()];
        seen[leaf as usize] = true;
        let mut cur = leaf;
        while let Some(p) = self.parent_of(cur) {
            if std::mem::replace(&mut seen[p as usize], true) {
                tracing::warn!(entry = %self.nodes[leaf as usize].id, "cycle in the parent chain; stopping the walk");
                break;
            }
            path.push(p);
            cur = p;
        }
        path.reverse();
        path
    }

    pub(crate) fn set_label(&mut self, target: &str, label: Option<&str>, timestamp: &str) {
        match label.filter(|l| !l.is_empty()) {
            Some(l) => {
                self.label_seq += 1;
                self.labels.insert(
                    target.to_owned(),
                    LabelState {
                        label: l.to_owned(),
                        timestamp: timestamp.to_owned(),
                        seq: self.label_seq,
                    },
                );
            }
            None => {
                self.labels.remove(target);
            }
        }
    }

    pub(crate) fn set_session_name(&mut self, name: Option<&str>) {
        self.session_name = name
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_owned);
    }

    /// Adds a node whose parent is already known (appends). Returns its index.
    pub(crate) fn push(&mut self, node: Node) -> u32 {
        let idx = self.nodes.len() as u32;
        self.by_id.insert(node.id.clone(), idx);
        self.nodes.push(node);
        idx
    }

    /// Labels in pi's `Map` order (insertion order, a re-set label moves to the end).
    pub(crate) fn labels_in_order(&self) -> Vec<(&str, &LabelState)> {
        let mut v: Vec<_> = self.labels.iter().map(|(k, s)| (k.as_str(), s)).collect();
        v.sort_by_key(|(_, s)| s.seq);
        v
    }
}

pub(crate) fn role_of(name: Option<&str>) -> Role {
    match name {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        _ => Role::Other,
    }
}

/// A deterministic 8-hex id for entry `ordinal` of a version 1 session: the same file
/// migrates to the same ids on every machine (pi draws random ones on every open).
fn v1_id(session_id: &str, ordinal: usize, taken: &HashMap<Box<str>, u32>) -> Box<str> {
    const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6f1c_9a52_3d0e_4b8a_9f5e_2c71_d4a8_b3e6);
    for salt in 0.. {
        let name = if salt == 0 {
            format!("{session_id}:{ordinal}")
        } else {
            format!("{session_id}:{ordinal}:{salt}")
        };
        let hex = uuid::Uuid::new_v5(&NAMESPACE, name.as_bytes())
            .simple()
            .to_string();
        let id = &hex[..8];
        if !taken.contains_key(id) {
            return id.into();
        }
    }
    unreachable_id()
}

// The loop above only ends by returning; this keeps the function total without a panic.
fn unreachable_id() -> Box<str> {
    uuid::Uuid::new_v4().hyphenated().to_string().into()
}

/// Random-access bytes of a session: its file, or its image in memory.
pub(crate) trait Source: Sync {
    fn size(&self) -> io::Result<u64>;
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
}

impl Source for std::fs::File {
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        super::store::read_at(self, buf, offset)
    }
}

impl Source for [u8] {
    fn size(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let start = (offset as usize).min(self.len());
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
}

/// `Read` over `src[pos..end)`.
struct RangeReader<'a, S: ?Sized> {
    src: &'a S,
    pos: u64,
    end: u64,
}

impl<S: Source + ?Sized> Read for RangeReader<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf.len().min((self.end - self.pos) as usize);
        if want == 0 {
            return Ok(0);
        }
        let n = self.src.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// What the parallel pass extracts from one line (owned: the line buffer is reused).
enum Rec {
    Corrupt {
        offset: u64,
        error: String,
    },
    /// A line longer than the bound, skipped unread.
    TooLong {
        offset: u64,
        len: u64,
    },
    /// A further `{"type":"session"}` line.
    Session,
    Entry(RawEntry),
}

struct RawEntry {
    loc: Loc,
    entry_type: EntryType,
    role: Role,
    id: Option<Box<str>>,
    parent_id: Option<Box<str>>,
    timestamp: Box<str>,
    target_id: Option<Box<str>>,
    label: Option<Box<str>>,
    name: Option<Box<str>>,
    /// The decoded message of a `message` entry, when decoding was asked for and worked.
    message: Option<Box<AgentMessage>>,
}

/// `decode`: also decode the message of a `message` entry (see [`load`]).
fn raw_entry(line: &[u8], loc: Loc, decode: bool) -> Rec {
    if decode && let Some(head) = parse_head_with_message(line) {
        return entry_rec(head, loc);
    }
    let lossy: String;
    let parsed = match parse_head(line) {
        Ok(h) => Ok(h),
        Err(e) => match String::from_utf8_lossy(line) {
            // pi reads files as UTF-8 with replacement characters; do the same, but only for
            // the rare line that needs it.
            Cow::Owned(fixed) => {
                lossy = fixed;
                parse_head(lossy.as_bytes())
            }
            Cow::Borrowed(_) => Err(e),
        },
    };
    match parsed {
        Ok(head) => entry_rec(head, loc),
        Err(e) => Rec::Corrupt {
            offset: loc.offset,
            error: e.to_string(),
        },
    }
}

fn entry_rec(head: Head<'_>, loc: Loc) -> Rec {
    if head.kind.as_deref() == Some("session") {
        return Rec::Session;
    }
    let entry_type = head
        .kind
        .as_deref()
        .map(EntryType::from_wire)
        .unwrap_or(EntryType::Unknown);
    let role = if entry_type == EntryType::Message {
        role_of(head.message.role.as_deref())
    } else {
        Role::NotMessage
    };
    let b = |c: Option<Cow<'_, str>>| c.as_deref().map(Box::<str>::from);
    Rec::Entry(RawEntry {
        loc,
        entry_type,
        role,
        id: b(head.id),
        parent_id: b(head.parent_id),
        timestamp: head.timestamp.as_deref().unwrap_or_default().into(),
        target_id: b(head.target_id),
        label: b(head.label),
        name: b(head.name),
        message: head
            .decoded
            .filter(|_| entry_type == EntryType::Message)
            .map(Box::new),
    })
}

/// Parses the lines that start in `[start, stop)` (a line may run past `stop`).
fn scan_chunk<S: Source + ?Sized>(
    src: &S,
    start: u64,
    stop: u64,
    eof: u64,
    skip_partial: bool,
    mut decode: bool,
    max_line: u64,
) -> io::Result<Vec<Rec>> {
    let from = if skip_partial { start - 1 } else { start };
    let mut scanner = LineScanner::at(
        RangeReader {
            src,
            pos: from,
            end: eof,
        },
        from,
    )
    .with_max_line(max_line);
    if skip_partial {
        // The line that started before `start` belongs to the previous chunk.
        scanner.next_line()?;
    }
    let mut out = Vec::new();
    while let Some(line) = scanner.next_line()? {
        if line.offset >= stop {
            break;
        }
        if let Some(len) = line.too_long {
            out.push(Rec::TooLong {
                offset: line.offset,
                len,
            });
            continue;
        }
        if is_blank(line.bytes) {
            continue;
        }
        let loc = Loc {
            offset: line.offset,
            len: line.bytes.len() as u64,
        };
        let rec = raw_entry(line.bytes, loc, decode);
        // After a compaction, what came before is likely summarized away: stop decoding.
        if let Rec::Entry(e) = &rec
            && e.entry_type == EntryType::Compaction
        {
            decode = false;
        }
        out.push(rec);
    }
    Ok(out)
}

/// Below this body size one thread does the whole pass.
const PARALLEL_MIN: u64 = 8 << 20;

/// Parses every line after the header, in parallel chunks on large files.
fn scan_body<S: Source + ?Sized>(
    src: &S,
    start: u64,
    eof: u64,
    decode: bool,
    max_line: u64,
) -> io::Result<Vec<Rec>> {
    let body = eof.saturating_sub(start);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8) as u64;
    let chunks = (body / PARALLEL_MIN).clamp(1, threads.max(1));
    if chunks == 1 {
        return scan_chunk(src, start, eof, eof, false, decode, max_line);
    }
    let bounds: Vec<u64> = (0..=chunks).map(|k| start + body * k / chunks).collect();
    let results: Vec<io::Result<Vec<Rec>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..chunks as usize)
            .map(|k| {
                let (s, e) = (bounds[k], bounds[k + 1]);
                scope.spawn(move || scan_chunk(src, s, e, eof, k > 0, decode, max_line))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("index thread panicked")))
            })
            .collect()
    });
    let mut out = Vec::new();
    for r in results {
        out.extend(r?);
    }
    Ok(out)
}

/// Reads and indexes a whole session. `path` is only used in errors and logs.
///
/// `decode`: also decode the messages of version 3 `message` entries, up to the first
/// compaction of each part of the file scanned (what comes before a compaction is usually
/// not in the context): [`Loaded::messages`]. Building the context then reads the file only
/// for what was not decoded.
///
/// `max_line`: a longer line is skipped with a warning, without being read into memory.
///
/// A first line that is not JSON followed by an entry line is a torn header (a crash while
/// the file was created): the header is made in memory ([`Loaded::header_made`]), with the
/// session id of the file name when it has one, and a warning.
pub(crate) fn load<S: Source + ?Sized>(
    src: &S,
    path: &Path,
    decode: bool,
    max_line: u64,
) -> Result<Loaded> {
    let io_err = |e| SessionError::io(path, e);
    let eof = src.size().map_err(io_err)?;
    let mut header: Option<SessionHeader> = None;
    let mut source_version = CURRENT_SESSION_VERSION;
    let mut index = Index::default();
    let mut parent_ids: Vec<Option<Box<str>>> = Vec::new();
    let mut content_seen = false;
    let mut first_error: Option<String> = None;
    let mut body_start = eof;
    let mut header_made = false;

    // The header: the first line that parses.
    let mut scanner = LineScanner::at(
        RangeReader {
            src,
            pos: 0,
            end: eof,
        },
        0,
    )
    .with_max_line(max_line);
    while let Some(line) = scanner.next_line().map_err(io_err)? {
        if let Some(len) = line.too_long {
            tracing::warn!(path = %path.display(), offset = line.offset, len, max_line, "skipping a line longer than the bound");
            content_seen = true;
            first_error.get_or_insert_with(|| format!("a line of {len} bytes"));
            continue;
        }
        if is_blank(line.bytes) {
            continue;
        }
        content_seen = true;
        let value = match parse_value(line.bytes) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(path = %path.display(), offset = line.offset, error = %e, "skipping a line that is not JSON");
                first_error.get_or_insert_with(|| e.to_string());
                continue;
            }
        };
        let is_header = value.get("type").and_then(|t| t.as_str()) == Some("session")
            && value.get("id").is_some_and(|i| i.is_string());
        let is_entry = value.get("type").is_some_and(|t| t.is_string())
            && value.get("id").is_some_and(|i| i.is_string());
        if !is_header && first_error.is_some() && is_entry {
            // The header line is torn: a header is made in memory, the file is repaired at
            // the first append.
            let made = made_header(path, &value);
            tracing::warn!(path = %path.display(), offset = line.offset, session = %made.id,
                "the session header is not readable; using one made in memory (the file is repaired at the next append)");
            header = Some(made);
            header_made = true;
            body_start = line.offset;
            break;
        }
        if !is_header {
            return Err(SessionError::NotASession {
                path: path.to_owned(),
                reason: format!(
                    "the first JSON line (at byte {}) is not a session header",
                    line.offset
                ),
            });
        }
        if let Some(v) = value.get("version")
            && v.as_u64().is_none_or(|v| v > CURRENT_SESSION_VERSION)
        {
            return Err(SessionError::UnsupportedVersion {
                path: path.to_owned(),
                version: v.to_string(),
            });
        }
        let h: SessionHeader =
            serde_json::from_value(value).map_err(|e| SessionError::NotASession {
                path: path.to_owned(),
                reason: format!("bad session header: {e}"),
            })?;
        source_version = h.version();
        if source_version < 2 {
            index.v1_positions.push(None); // the header is position 0
        }
        header = Some(h);
        body_start = line.offset + line.bytes.len() as u64 + u64::from(line.terminated);
        break;
    }
    drop(scanner);
    if header.is_none() {
        if content_seen {
            return Err(SessionError::NotASession {
                path: path.to_owned(),
                reason: match first_error {
                    Some(e) => format!("no JSON line ({e})"),
                    None => "no session header".into(),
                },
            });
        }
        return Ok(Loaded {
            header: None,
            index,
            source_version,
            ends_with_newline: ends_with_newline(src, eof).map_err(io_err)?,
            messages: Vec::new(),
            header_made,
        });
    }

    let decode = decode && source_version >= CURRENT_SESSION_VERSION;
    let mut messages: Vec<Option<Box<AgentMessage>>> = Vec::new();
    for rec in scan_body(src, body_start, eof, decode, max_line).map_err(io_err)? {
        let raw = match rec {
            Rec::Corrupt { offset, error } => {
                tracing::warn!(path = %path.display(), offset, error = %error, "skipping a corrupt session line");
                continue;
            }
            Rec::TooLong { offset, len } => {
                tracing::warn!(path = %path.display(), offset, len, max_line, "skipping a session line longer than the bound");
                continue;
            }
            Rec::Session => {
                // pi ignores further header lines (they are not entries); they still take a
                // position in a version 1 file's entry list.
                if source_version < 2 {
                    index.v1_positions.push(None);
                }
                continue;
            }
            Rec::Entry(raw) => raw,
        };
        let (id, parent_id) = if source_version < 2 {
            let session_id = header.as_ref().map(|h| h.id.as_str()).unwrap_or_default();
            let id = v1_id(session_id, index.nodes.len(), &index.by_id);
            let parent = index.nodes.last().map(|n| n.id.clone());
            index.v1_positions.push(Some(index.nodes.len() as u32));
            (id, parent)
        } else {
            match raw.id {
                Some(id) => (id, raw.parent_id),
                None => {
                    tracing::warn!(path = %path.display(), offset = raw.loc.offset, "skipping an entry without a string id");
                    continue;
                }
            }
        };
        match raw.entry_type {
            EntryType::Label => {
                if let Some(target) = raw.target_id.as_deref() {
                    index.set_label(target, raw.label.as_deref(), &raw.timestamp);
                }
            }
            EntryType::SessionInfo => index.set_session_name(raw.name.as_deref()),
            _ => {}
        }
        if index.by_id.contains_key(&id) {
            tracing::warn!(path = %path.display(), id = %id, "duplicate entry id; the later entry wins");
        }
        index.by_id.insert(id.clone(), index.nodes.len() as u32);
        index.nodes.push(Node {
            ts_ms: iso_to_millis(&raw.timestamp),
            id,
            parent: Parent::Root,
            entry_type: raw.entry_type,
            role: raw.role,
            timestamp: raw.timestamp,
            loc: raw.loc,
        });
        parent_ids.push(parent_id);
        if decode {
            messages.push(raw.message);
        }
    }

    // Resolve parents now that every id is known (a parent may come later in the file, and
    // the last entry with an id wins, as in pi's `byId`).
    for (i, parent_id) in parent_ids.into_iter().enumerate() {
        let parent = match parent_id {
            None => Parent::Root,
            Some(p) if *p == *index.nodes[i].id => Parent::Root,
            Some(p) => match index.by_id.get(&p) {
                Some(&n) => Parent::Node(n),
                None => {
                    tracing::warn!(path = %path.display(), entry = %index.nodes[i].id, parent = %p,
                        "entry's parent does not exist; treating it as a root");
                    Parent::Missing(p)
                }
            },
        };
        index.nodes[i].parent = parent;
    }

    Ok(Loaded {
        header,
        index,
        source_version,
        ends_with_newline: ends_with_newline(src, eof).map_err(io_err)?,
        messages,
        header_made,
    })
}

/// The header of a file whose header line is torn: the session id from the file name
/// (`<timestamp>_<id>.jsonl`, as sessions are named) when it has one, else a new one; the
/// first entry's timestamp; the working directory is filled in by the caller.
fn made_header(path: &Path, first_entry: &serde_json::Value) -> SessionHeader {
    let from_name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.rsplit_once('_'))
        .and_then(|(_, id)| uuid::Uuid::parse_str(id).ok())
        .map(|u| u.hyphenated().to_string());
    let id = from_name.unwrap_or_else(|| uuid::Uuid::now_v7().hyphenated().to_string());
    let timestamp = first_entry
        .get("timestamp")
        .and_then(|t| t.as_str())
        .map(str::to_owned)
        .unwrap_or_else(super::time::now_iso);
    SessionHeader::new(id, timestamp, "")
}

fn ends_with_newline<S: Source + ?Sized>(src: &S, eof: u64) -> io::Result<bool> {
    if eof == 0 {
        return Ok(true);
    }
    let mut last = [0u8];
    src.read_at(&mut last, eof - 1)?;
    Ok(last[0] == b'\n')
}
