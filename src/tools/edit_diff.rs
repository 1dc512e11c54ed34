//! The pure part of the `edit` tool: matching each `oldText` against the file, applying the
//! replacements, and pi's line-numbered diff of the change (`details.diff`).
//!
//! The rules are pi's (`edit-diff.js`): every `oldText` is matched against the original
//! content (not after earlier edits), must not be empty, must be found and be unique, and the
//! matched regions must not overlap. An exact match is tried first; failing that, a fuzzy
//! match, on text normalized by [`normalize_for_fuzzy_match`] (NFKC, trailing whitespace of
//! each line dropped, smart quotes, Unicode dashes and spaces made ASCII). Uniqueness is always
//! counted on the normalized text, as pi does. `\r\n` and a BOM are kept.
//!
//! Where this differs from pi, deliberately: only the bytes an edit matched are replaced. pi
//! rewrites the whole file from its normalized form (after a fuzzy match, every smart quote
//! and trailing space in the file is gone; after any edit, mixed line endings become the
//! first line's and invalid UTF-8 becomes U+FFFD); here the rest of the file keeps its bytes.
//! To do that, the text an edit is matched against is a [`View`] of the file: the normalized
//! text with a map back to the original byte offsets. And an `oldText` that is not found gets
//! a hint naming the closest region of the file ([`closest_region`]).
//!
//! Everything is linear in the size of the file: matching is `memmem`, each view is one pass,
//! and the diff sets the common prefix of lines aside and runs jsdiff's algorithm on the rest
//! within a budget linear in its lines (an edit of one line in a big file costs one pass over
//! the lines after it), falling back to a diff of the changed middle alone.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::rc::Rc;

use memchr::{memchr, memchr_iter, memmem, memrchr};
use serde_json::{Map, Value};
use unicode_normalization::char::{canonical_combining_class, decompose_compatible};
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

/// One replacement of an `edit` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edit {
    pub(crate) old_text: String,
    pub(crate) new_text: String,
}

impl Edit {
    #[cfg(test)]
    pub(crate) fn new(old_text: &str, new_text: &str) -> Self {
        Edit {
            old_text: old_text.to_owned(),
            new_text: new_text.to_owned(),
        }
    }
}

/// A successful set of edits: the new file, and pi's diff of the change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    /// The whole new file, BOM and line endings as the original had them.
    pub(crate) bytes: Vec<u8>,
    /// The change, in pi's format ([`generate_diff`]).
    pub(crate) diff: Diff,
}

/// pi's `generateDiffString` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Diff {
    /// Lines ` <n> text` (context), `-<n> text`, `+<n> text`, and ` <pad> ...` for a gap.
    pub(crate) diff: String,
    /// The first changed line, numbered in the new file.
    pub(crate) first_changed_line: Option<usize>,
}

// ---------------------------------------------------------------------------------------------
// Arguments

/// pi's `prepareArguments` for `edit`: `edits` sent as a JSON string is parsed, and the legacy
/// top-level `oldText`/`newText` pair becomes one more entry of `edits` (the schema has
/// `additionalProperties: false`, so this runs before validation). `None`: nothing to change.
pub(crate) fn prepare_arguments(raw: &Map<String, Value>) -> Option<Map<String, Value>> {
    let mut args = raw.clone();
    let mut changed = false;
    if let Some(Value::String(text)) = args.get("edits")
        && let Ok(parsed @ Value::Array(_)) = serde_json::from_str::<Value>(text)
    {
        args.insert("edits".to_owned(), parsed);
        changed = true;
    }
    if let (Some(Value::String(_)), Some(Value::String(_))) =
        (args.get("oldText"), args.get("newText"))
    {
        let old = args.shift_remove("oldText").unwrap_or_default();
        let new = args.shift_remove("newText").unwrap_or_default();
        let mut edits = match args.get("edits") {
            Some(Value::Array(edits)) => edits.clone(),
            _ => Vec::new(),
        };
        let mut legacy = Map::new();
        legacy.insert("oldText".to_owned(), old);
        legacy.insert("newText".to_owned(), new);
        edits.push(Value::Object(legacy));
        args.insert("edits".to_owned(), Value::Array(edits));
        changed = true;
    }
    changed.then_some(args)
}

// ---------------------------------------------------------------------------------------------
// Views: normalized text with a map back to the original

/// A stretch where a view's text differs from its source: source bytes `src_*` became text
/// bytes `dst_*` (possibly none: trailing whitespace dropped). Between pieces the text is the
/// source's, byte for byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    src_start: usize,
    src_end: usize,
    dst_start: usize,
    dst_end: usize,
}

/// A text derived from a source (the file's bytes, or another view's text), with the pieces
/// that differ, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct View {
    text: String,
    pieces: Vec<Piece>,
}

/// Where a region of a view's text lies in its source. When a boundary falls inside a piece
/// (a match starting at the `i` of `ﬁ`, normalized `fi`), the region is widened to the whole
/// piece and the piece's normalized text outside the match is carried in `prefix`/`suffix`,
/// to be written back with the replacement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SourceRange<'a> {
    start: usize,
    end: usize,
    prefix: &'a str,
    suffix: &'a str,
}

/// Which end of a region a position is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Start,
    End,
}

enum Loc {
    /// At this source offset.
    At(usize),
    /// Strictly inside the non-empty piece with this index.
    Inside(usize),
}

impl View {
    /// Where text offset `p` is in the source. Where whitespace was dropped at `p` (the end
    /// of a line), a region takes it in: its start goes before the whitespace, its end after.
    fn locate(&self, p: usize, side: Side) -> Loc {
        let mut idx = self.pieces.partition_point(|pc| pc.dst_end <= p);
        if let Some(pc) = self.pieces.get(idx)
            && pc.dst_start < p
        {
            return Loc::Inside(idx);
        }
        if side == Side::Start {
            while idx > 0 && self.pieces[idx - 1].dst_start == p {
                idx -= 1;
            }
        }
        let (src, dst) = match idx.checked_sub(1).and_then(|i| self.pieces.get(i)) {
            Some(pc) => (pc.src_end, pc.dst_end),
            None => (0, 0),
        };
        Loc::At(src + (p - dst))
    }

    /// The source region of text `start..end` (char boundaries of the text).
    fn source_range(&self, start: usize, end: usize) -> SourceRange<'_> {
        let (src_start, prefix) = match self.locate(start, Side::Start) {
            Loc::At(s) => (s, ""),
            Loc::Inside(i) => {
                let pc = self.pieces[i];
                (pc.src_start, &self.text[pc.dst_start..start])
            }
        };
        let (src_end, suffix) = match self.locate(end, Side::End) {
            Loc::At(s) => (s, ""),
            Loc::Inside(i) => {
                let pc = self.pieces[i];
                (pc.src_end, &self.text[end..pc.dst_end])
            }
        };
        SourceRange {
            start: src_start,
            end: src_end,
            prefix,
            suffix,
        }
    }
}

/// The file's bytes (BOM already stripped) as pi matches against them: decoded as UTF-8 (an
/// invalid sequence becomes U+FFFD, as node's decoder does), `\r\n` and a lone `\r` made `\n`.
pub(crate) fn lf_view(bytes: &[u8]) -> View {
    let mut view = View {
        text: String::with_capacity(bytes.len()),
        pieces: Vec::new(),
    };
    let mut src = 0;
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid();
        push_lf(&mut view, valid, src);
        src += valid.len();
        let invalid = chunk.invalid();
        if !invalid.is_empty() {
            let dst_start = view.text.len();
            view.text.push(char::REPLACEMENT_CHARACTER);
            view.pieces.push(Piece {
                src_start: src,
                src_end: src + invalid.len(),
                dst_start,
                dst_end: view.text.len(),
            });
            src += invalid.len();
        }
    }
    view
}

fn push_lf(view: &mut View, s: &str, base: usize) {
    let bytes = s.as_bytes();
    let mut last = 0;
    for i in memchr_iter(b'\r', bytes) {
        view.text.push_str(&s[last..i]);
        let dst_start = view.text.len();
        view.text.push('\n');
        if bytes.get(i + 1) == Some(&b'\n') {
            view.pieces.push(Piece {
                src_start: base + i,
                src_end: base + i + 2,
                dst_start,
                dst_end: dst_start + 1,
            });
            last = i + 2;
        } else {
            // `\r` to `\n`: same length, so no piece is needed to map offsets.
            last = i + 1;
        }
    }
    view.text.push_str(&s[last..]);
}

/// `\r\n` and lone `\r` made `\n` (pi's `normalizeToLF`).
pub(crate) fn normalize_to_lf(text: &str) -> String {
    if !text.contains('\r') {
        return text.to_owned();
    }
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// pi's `detectLineEnding`: `\r\n` when the first `\n` ends a `\r\n`.
fn uses_crlf(bytes: &[u8]) -> bool {
    memchr(b'\n', bytes).is_some_and(|i| i > 0 && bytes[i - 1] == b'\r')
}

/// Whitespace as JavaScript's `trimEnd` sees it.
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// pi's character folds after NFKC: smart quotes, Unicode dashes, special spaces.
fn fold_char(c: char) -> Option<char> {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => Some('\''),
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => Some('"'),
        '\u{2010}'..='\u{2015}' | '\u{2212}' => Some('-'),
        '\u{A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => Some(' '),
        _ => None,
    }
}

/// A character before which NFKC may cut the text: nothing before it can combine or reorder
/// with it, so each side normalizes on its own. That is a starter whose (compatibility)
/// decomposition starts with a starter that never combines with a preceding character: any
/// character that is NFKC by itself, and many that are not (`ﬁ`, a no-break space).
fn is_nfkc_boundary(c: char) -> bool {
    if c.is_ascii() {
        return true;
    }
    if canonical_combining_class(c) != 0 {
        return false;
    }
    match is_nfkc_quick(std::iter::once(c)) {
        IsNormalized::Yes => true,
        IsNormalized::Maybe => false,
        IsNormalized::No => {
            let mut first = None;
            decompose_compatible(c, |d| {
                first.get_or_insert(d);
            });
            first.is_some_and(|f| {
                canonical_combining_class(f) == 0
                    && is_nfkc_quick(std::iter::once(f)) == IsNormalized::Yes
            })
        }
    }
}

/// pi's `normalizeForFuzzyMatch`: NFKC, trailing whitespace of every line removed, smart
/// quotes, Unicode dashes and special spaces made ASCII.
pub(crate) fn normalize_for_fuzzy_match(text: &str) -> String {
    fuzzy_view(text).text
}

/// [`normalize_for_fuzzy_match`] of `text`, with the map back to `text`.
pub(crate) fn fuzzy_view(text: &str) -> View {
    let mut view = View {
        text: String::with_capacity(text.len()),
        pieces: Vec::new(),
    };
    let mut line_start = 0;
    loop {
        let line_end =
            memchr(b'\n', &text.as_bytes()[line_start..]).map_or(text.len(), |i| line_start + i);
        let line = &text[line_start..line_end];
        let out_start = view.text.len();
        let first_piece = view.pieces.len();
        if line.is_ascii() {
            view.text.push_str(line);
        } else {
            normalize_line(&mut view, line, line_start);
        }
        trim_line_end(&mut view, out_start, first_piece, line_start, line_end);
        if line_end == text.len() {
            break;
        }
        view.text.push('\n');
        line_start = line_end + 1;
    }
    view
}

/// NFKC and the folds of one line, cut into pieces at NFKC boundaries.
fn normalize_line(view: &mut View, line: &str, base: usize) {
    let mut chars = line.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let mut end = start + c.len_utf8();
        while let Some(&(i, next)) = chars.peek() {
            if is_nfkc_boundary(next) {
                break;
            }
            end = i + next.len_utf8();
            chars.next();
        }
        let dst_start = view.text.len();
        if end == start + c.len_utf8() && is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes {
            // NFKC already; only a fold can change it.
            match fold_char(c) {
                Some(folded) => view.text.push(folded),
                None => {
                    view.text.push(c);
                    continue;
                }
            }
        } else {
            let segment = &line[start..end];
            for n in segment.nfkc() {
                view.text.push(fold_char(n).unwrap_or(n));
            }
            if view.text[dst_start..] == *segment {
                continue;
            }
        }
        view.pieces.push(Piece {
            src_start: base + start,
            src_end: base + end,
            dst_start,
            dst_end: view.text.len(),
        });
    }
}

/// Drops the trailing whitespace of the line just written (text from `out_start`, source
/// `src_start..src_end`), mapping the source's dropped bytes to nothing.
fn trim_line_end(
    view: &mut View,
    out_start: usize,
    first_piece: usize,
    src_start: usize,
    src_end: usize,
) {
    let trimmed = view.text[out_start..].trim_end_matches(is_js_space).len();
    let t = out_start + trimmed;
    if t == view.text.len() {
        return;
    }
    while view.pieces.len() > first_piece && view.pieces.last().is_some_and(|pc| pc.dst_start >= t)
    {
        view.pieces.pop();
    }
    let last = if view.pieces.len() > first_piece {
        view.pieces.last_mut()
    } else {
        None
    };
    match last {
        Some(pc) if pc.dst_end > t => {
            // The piece the whitespace starts in swallows the rest of the line.
            pc.dst_end = t;
            pc.src_end = src_end;
        }
        Some(pc) => {
            let src_t = pc.src_end + (t - pc.dst_end);
            view.pieces.push(Piece {
                src_start: src_t,
                src_end,
                dst_start: t,
                dst_end: t,
            });
        }
        None => {
            let src_t = src_start + (t - out_start);
            view.pieces.push(Piece {
                src_start: src_t,
                src_end,
                dst_start: t,
                dst_end: t,
            });
        }
    }
    view.text.truncate(t);
}

// ---------------------------------------------------------------------------------------------
// Applying edits

fn not_found_error(path: &str, index: usize, total: usize) -> String {
    if total == 1 {
        format!(
            "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
        )
    } else {
        format!(
            "Could not find edits[{index}] in {path}. The oldText must match exactly including all whitespace and newlines."
        )
    }
}

fn duplicate_error(path: &str, index: usize, total: usize, occurrences: usize) -> String {
    if total == 1 {
        format!(
            "Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
        )
    } else {
        format!(
            "Found {occurrences} occurrences of edits[{index}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
        )
    }
}

fn empty_error(path: &str, index: usize, total: usize) -> String {
    if total == 1 {
        format!("oldText must not be empty in {path}.")
    } else {
        format!("edits[{index}].oldText must not be empty in {path}.")
    }
}

fn no_change_error(path: &str, total: usize) -> String {
    if total == 1 {
        format!(
            "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
        )
    } else {
        format!("No changes made to {path}. The replacements produced identical content.")
    }
}

fn overlap_error(path: &str, first: usize, second: usize) -> String {
    format!(
        "edits[{first}] and edits[{second}] overlap in {path}. Merge them into one edit or target disjoint regions."
    )
}

/// Non-overlapping occurrences (JavaScript's `split(needle).length - 1`).
fn count_occurrences(haystack: &str, needle: &str) -> usize {
    memmem::find_iter(haystack.as_bytes(), needle.as_bytes()).count()
}

fn find(haystack: &str, needle: &str) -> Option<usize> {
    memmem::find(haystack.as_bytes(), needle.as_bytes())
}

/// Whether replacing each `start..end` of `text` by its string (sorted, disjoint) gives `text`
/// back: pi's "identical content" check, without building the new text.
fn splices_are_identity(text: &[u8], splices: &[(usize, usize, &str)]) -> bool {
    let growth: isize = splices
        .iter()
        .map(|(s, e, r)| r.len() as isize - (e - s) as isize)
        .sum();
    if growth != 0 {
        return false;
    }
    // `pos` walks the new text (which is as long as `text`), `cursor` the old.
    let mut pos = 0;
    let mut cursor = 0;
    for &(start, end, replacement) in splices {
        let kept = start - cursor;
        if text.get(pos..pos + kept) != text.get(cursor..start) {
            return false;
        }
        pos += kept;
        if text.get(pos..pos + replacement.len()) != Some(replacement.as_bytes()) {
            return false;
        }
        pos += replacement.len();
        cursor = end;
    }
    text.get(pos..) == text.get(cursor..)
}

/// One matched edit, in the text it was matched against.
struct Match {
    edit: usize,
    start: usize,
    end: usize,
}

/// Applies `edits` to the file `raw`, by pi's rules (see the module docs); `Err` is the text
/// the model reads. `path` is the path as the model wrote it, for the messages.
pub(crate) fn apply_edits(raw: &[u8], edits: &[Edit], path: &str) -> Result<Applied, String> {
    let (bom, body) = match raw.strip_prefix(b"\xEF\xBB\xBF") {
        Some(body) => (3, body),
        None => (0, raw),
    };
    let total = edits.len();
    let edits: Vec<Edit> = edits
        .iter()
        .map(|e| Edit {
            old_text: normalize_to_lf(&e.old_text),
            new_text: normalize_to_lf(&e.new_text),
        })
        .collect();
    if let Some(i) = edits.iter().position(|e| e.old_text.is_empty()) {
        return Err(empty_error(path, i, total));
    }

    let base = lf_view(body);
    let fuzzy = fuzzy_view(&base.text);
    let folded: Vec<String> = edits
        .iter()
        .map(|e| normalize_for_fuzzy_match(&e.old_text))
        .collect();
    // A fuzzy match of "" (an oldText of trailing whitespace only) would match anywhere.
    let fuzzy_find = |i: usize, text: &str| -> Option<usize> {
        let f = &folded[i];
        if f.is_empty() { None } else { find(text, f) }
    };
    // pi: if any edit needs the fuzzy match, all are matched in the normalized text.
    let use_fuzzy = edits.iter().enumerate().any(|(i, e)| {
        find(&base.text, &e.old_text).is_none() && fuzzy_find(i, &fuzzy.text).is_some()
    });
    let space = if use_fuzzy { &fuzzy.text } else { &base.text };

    let mut matches = Vec::with_capacity(total);
    for (i, edit) in edits.iter().enumerate() {
        let found = match find(space, &edit.old_text) {
            Some(start) => Some((start, edit.old_text.len())),
            None if use_fuzzy => fuzzy_find(i, space).map(|start| (start, folded[i].len())),
            None => None,
        };
        let Some((start, len)) = found else {
            let mut message = not_found_error(path, i, total);
            if let Some(hint) = closest_region(&base.text, &fuzzy.text, &folded[i]) {
                message.push_str(&hint);
            }
            return Err(message);
        };
        let occurrences = if folded[i].is_empty() {
            count_occurrences(space, &edit.old_text)
        } else {
            count_occurrences(&fuzzy.text, &folded[i])
        };
        if occurrences > 1 {
            return Err(duplicate_error(path, i, total, occurrences));
        }
        matches.push(Match {
            edit: i,
            start,
            end: start + len,
        });
    }
    matches.sort_by_key(|m| m.start);
    for pair in matches.windows(2) {
        if pair[0].end > pair[1].start {
            return Err(overlap_error(path, pair[0].edit, pair[1].edit));
        }
    }
    let splices: Vec<(usize, usize, &str)> = matches
        .iter()
        .map(|m| (m.start, m.end, edits[m.edit].new_text.as_str()))
        .collect();
    if splices_are_identity(space.as_bytes(), &splices) {
        return Err(no_change_error(path, total));
    }

    // Back to the LF text, then to the file's bytes: only the matched bytes are replaced.
    let mut regions: Vec<(usize, SourceRange<'_>)> = matches
        .iter()
        .map(|m| {
            let range = if use_fuzzy {
                fuzzy.source_range(m.start, m.end)
            } else {
                SourceRange {
                    start: m.start,
                    end: m.end,
                    prefix: "",
                    suffix: "",
                }
            };
            (m.edit, range)
        })
        .collect();
    for i in 1..regions.len() {
        let (prev_edit, prev) = regions[i - 1];
        let (edit, cur) = &mut regions[i];
        if prev.end > cur.start {
            // Two edits that meet at a line end both take in its dropped trailing whitespace:
            // the first keeps it. Two that share a normalized piece (`ﬁ`) cannot both have it.
            if prev.suffix.is_empty() && cur.prefix.is_empty() && prev.end <= cur.end {
                cur.start = prev.end;
            } else {
                return Err(overlap_error(path, prev_edit, *edit));
            }
        }
    }
    let regions: Vec<(usize, usize, String)> = regions
        .iter()
        .map(|(edit, r)| {
            let replacement = [r.prefix, &edits[*edit].new_text, r.suffix].concat();
            (r.start, r.end, replacement)
        })
        .collect();
    let crlf = uses_crlf(body);
    let mut new_base = String::with_capacity(base.text.len());
    let mut bytes = Vec::with_capacity(raw.len());
    bytes.extend_from_slice(&raw[..bom]);
    let (mut base_cursor, mut raw_cursor) = (0, 0);
    for (start, end, replacement) in &regions {
        new_base.push_str(&base.text[base_cursor..*start]);
        new_base.push_str(replacement);
        base_cursor = *end;

        let r = base.source_range(*start, *end);
        bytes.extend_from_slice(&body[raw_cursor..r.start]);
        let text = [r.prefix, replacement, r.suffix].concat();
        if crlf {
            bytes.extend_from_slice(text.replace('\n', "\r\n").as_bytes());
        } else {
            bytes.extend_from_slice(text.as_bytes());
        }
        raw_cursor = r.end;
    }
    new_base.push_str(&base.text[base_cursor..]);
    bytes.extend_from_slice(&body[raw_cursor..]);
    if bytes == raw {
        return Err(no_change_error(path, total));
    }
    let diff = generate_diff(&base.text, &new_base, DIFF_CONTEXT);
    Ok(Applied { bytes, diff })
}

// ---------------------------------------------------------------------------------------------
// The closest region, for an oldText that was not found

/// The smallest similarity (Dice coefficient of character bigrams, whitespace ignored) for
/// a region to be named as the closest match.
const HINT_MIN_SIMILARITY: f64 = 0.5;
/// Lines of the closest region shown at most (each cut at grep's 500 characters).
const HINT_MAX_LINES: usize = 40;

/// Calls `f` with each bigram of `line`'s characters, whitespace left out.
fn for_each_bigram(line: &str, mut f: impl FnMut(u64)) {
    let mut prev: Option<char> = None;
    for c in line.chars().filter(|c| !c.is_whitespace()) {
        if let Some(p) = prev {
            f((u64::from(u32::from(p)) << 32) | u64::from(u32::from(c)));
        }
        prev = Some(c);
    }
}

/// The bigrams of a window of lines, against those of the oldText.
struct Window {
    /// bigram -> (count in the oldText, count in the window), for the oldText's bigrams.
    counts: HashMap<u64, (u32, u32)>,
    /// The sum over bigrams of the smaller count.
    overlap: u64,
    /// Bigrams in the window.
    total: u64,
}

impl Window {
    fn add(&mut self, line: &str) {
        for_each_bigram(line, |b| {
            self.total += 1;
            if let Some((old, win)) = self.counts.get_mut(&b) {
                if *win < *old {
                    self.overlap += 1;
                }
                *win += 1;
            }
        });
    }

    fn remove(&mut self, line: &str) {
        for_each_bigram(line, |b| {
            self.total -= 1;
            if let Some((old, win)) = self.counts.get_mut(&b) {
                if *win <= *old {
                    self.overlap -= 1;
                }
                *win -= 1;
            }
        });
    }
}

/// The hint appended to "Could not find …": the lines of the file most like `folded` (an
/// oldText in fuzzy-normalized form), found in `fuzzy` (the file's normalized text) and
/// shown from `base` (its text as it is, with `\n` endings). `None` when nothing is similar
/// enough. One pass over the file: a window of as many lines as the oldText slides down it,
/// keeping the bigram overlap up to date.
pub(crate) fn closest_region(base: &str, fuzzy: &str, folded: &str) -> Option<String> {
    let lines: Vec<&str> = folded.split('\n').collect();
    let first = lines.iter().position(|l| !l.trim().is_empty())?;
    let last = lines.iter().rposition(|l| !l.trim().is_empty())?;
    let k = last - first + 1;

    let mut counts: HashMap<u64, (u32, u32)> = HashMap::new();
    let mut old_total = 0u64;
    for line in &lines[first..=last] {
        for_each_bigram(line, |b| {
            counts.entry(b).or_default().0 += 1;
            old_total += 1;
        });
    }
    if old_total == 0 {
        return None;
    }
    let mut window = Window {
        counts,
        overlap: 0,
        total: 0,
    };
    let file_lines = memchr_iter(b'\n', fuzzy.as_bytes()).count() + 1;
    let k = k.min(file_lines);
    let mut best: Option<(f64, usize)> = None;
    let mut leaving = fuzzy.split('\n');
    for (i, line) in fuzzy.split('\n').enumerate() {
        window.add(line);
        if i >= k
            && let Some(out) = leaving.next()
        {
            window.remove(out);
        }
        if i + 1 >= k {
            let score = 2.0 * window.overlap as f64 / (old_total + window.total) as f64;
            if best.is_none_or(|(b, _)| score > b) {
                best = Some((score, i + 1 - k));
            }
        }
    }
    let (score, start) = best?;
    if score < HINT_MIN_SIMILARITY {
        return None;
    }
    let shown: Vec<&str> = base.split('\n').skip(start).take(k).collect();
    let end_line = start + shown.len();
    let mut hint = if shown.len() == 1 {
        format!("\nThe closest match is at line {}:\n", start + 1)
    } else {
        format!(
            "\nThe closest match is at lines {}-{end_line}:\n",
            start + 1
        )
    };
    let lines: Vec<String> = shown[..shown.len().min(HINT_MAX_LINES)]
        .iter()
        .map(|line| super::truncate::truncate_line(line, super::truncate::GREP_MAX_LINE_LENGTH).0)
        .collect();
    hint.push_str(&lines.join("\n"));
    if shown.len() > HINT_MAX_LINES {
        let _ = write!(hint, "\n... ({} more lines)", shown.len() - HINT_MAX_LINES);
    }
    Some(hint)
}

// ---------------------------------------------------------------------------------------------
// The diff

/// Context lines around a change (pi's default).
pub(crate) const DIFF_CONTEXT: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Common,
    Added,
    Removed,
}

/// One run of jsdiff's `diffLines` result: `start..end` of the old text (common, removed) or
/// of the new text (added).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Part {
    kind: Kind,
    start: usize,
    end: usize,
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 256;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + CHUNK <= n && a[i..i + CHUNK] == b[i..i + CHUNK] {
        i += CHUNK;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 256;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + CHUNK <= n
        && a[a.len() - i - CHUNK..a.len() - i] == b[b.len() - i - CHUNK..b.len() - i]
    {
        i += CHUNK;
    }
    while i < n && a[a.len() - 1 - i] == b[b.len() - 1 - i] {
        i += 1;
    }
    i
}

/// The lines of a part's text (pi: `value.split("\n")`, a last empty string dropped).
fn part_lines(text: &str) -> std::str::Split<'_, char> {
    text.strip_suffix('\n').unwrap_or(text).split('\n')
}

fn count_lines(text: &str) -> usize {
    let body = text.strip_suffix('\n').unwrap_or(text);
    memchr_iter(b'\n', body.as_bytes()).count() + 1
}

/// pi's `generateDiffString(old, new, context)`: jsdiff's `diffLines`, shown with line
/// numbers, `context` lines around each change and `...` for what is left out. Unchanged
/// stretches are counted, not copied, so the output is as long as the change.
pub(crate) fn generate_diff(old: &str, new: &str, context: usize) -> Diff {
    let parts = diff_lines(old, new);
    let old_lines = memchr_iter(b'\n', old.as_bytes()).count() + 1;
    let new_lines = memchr_iter(b'\n', new.as_bytes()).count() + 1;
    let width = old_lines.max(new_lines).to_string().len();

    let mut out: Vec<String> = Vec::new();
    // (old line number, new line number)
    let mut nums = (1usize, 1usize);
    let mut last_was_change = false;
    let mut first_changed_line = None;
    let text_of = |p: &Part| match p.kind {
        Kind::Added => &new[p.start..p.end],
        Kind::Common | Kind::Removed => &old[p.start..p.end],
    };
    let gap = format!(" {:width$} ...", "");
    for (i, part) in parts.iter().enumerate() {
        let text = text_of(part);
        match part.kind {
            Kind::Added | Kind::Removed => {
                first_changed_line.get_or_insert(nums.1);
                for line in part_lines(text) {
                    if part.kind == Kind::Added {
                        out.push(format!("+{:>width$} {line}", nums.1));
                        nums.1 += 1;
                    } else {
                        out.push(format!("-{:>width$} {line}", nums.0));
                        nums.0 += 1;
                    }
                }
                last_was_change = true;
            }
            Kind::Common => {
                let next_is_change = parts.get(i + 1).is_some_and(|p| p.kind != Kind::Common);
                let count = count_lines(text);
                let context_line = |line: &str, out: &mut Vec<String>, num: &mut (usize, usize)| {
                    out.push(format!(" {:>width$} {line}", num.0));
                    num.0 += 1;
                    num.1 += 1;
                };
                let shown_head = if last_was_change { context } else { 0 };
                let shown_tail = if next_is_change { context } else { 0 };
                if last_was_change && next_is_change && count <= 2 * context {
                    for line in part_lines(text) {
                        context_line(line, &mut out, &mut nums);
                    }
                } else if last_was_change || next_is_change {
                    let head = shown_head.min(count);
                    let tail = shown_tail.min(count - head);
                    let skipped = count - head - tail;
                    for line in part_lines(text).take(head) {
                        context_line(line, &mut out, &mut nums);
                    }
                    if skipped > 0 {
                        out.push(gap.clone());
                        nums.0 += skipped;
                        nums.1 += skipped;
                    }
                    let mut tail_lines: Vec<&str> = part_lines(text).rev().take(tail).collect();
                    tail_lines.reverse();
                    for line in tail_lines {
                        context_line(line, &mut out, &mut nums);
                    }
                } else {
                    nums.0 += count;
                    nums.1 += count;
                }
                last_was_change = false;
            }
        }
    }
    Diff {
        diff: out.join("\n"),
        first_changed_line,
    }
}

/// jsdiff's line tokens of `text[start..end]`: each line with its `\n`.
struct Tokens<'a> {
    text: &'a str,
    /// Token `i` is `bounds[i]..bounds[i + 1]` of `text`.
    bounds: Vec<usize>,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str, start: usize, end: usize) -> Self {
        let mut bounds = vec![start];
        bounds.extend(memchr_iter(b'\n', &text.as_bytes()[start..end]).map(|i| start + i + 1));
        if bounds.last() != Some(&end) {
            bounds.push(end);
        }
        Tokens { text, bounds }
    }

    fn len(&self) -> usize {
        self.bounds.len() - 1
    }

    fn get(&self, i: usize) -> &'a str {
        &self.text[self.bounds[i]..self.bounds[i + 1]]
    }

    /// The text range of `count` tokens from `from`.
    fn span(&self, from: usize, count: usize) -> (usize, usize) {
        (self.bounds[from], self.bounds[from + count])
    }
}

/// jsdiff's `diffLines(old, new)` as parts.
///
/// jsdiff starts by following the common prefix, so that is set aside first (its lines are
/// never compared again). The rest is diffed with jsdiff's own algorithm, within a budget
/// linear in the lines; past it (a big change near the start of a big file), the common
/// suffix of lines is set aside too and only the middle is diffed (jsdiff could align an
/// ambiguous change differently then: which of two equal lines is the added one); past a
/// second budget, the whole middle is shown removed, then added.
fn diff_lines(old: &str, new: &str) -> Vec<Part> {
    if old == new {
        return if old.is_empty() {
            Vec::new()
        } else {
            vec![Part {
                kind: Kind::Common,
                start: 0,
                end: old.len(),
            }]
        };
    }
    let (ob, nb) = (old.as_bytes(), new.as_bytes());
    let p = common_prefix(ob, nb);
    let prefix = memrchr(b'\n', &ob[..p]).map_or(0, |i| i + 1);

    let mut old_end = old.len();
    let mut new_end = new.len();
    let mut old_tokens = Tokens::new(old, prefix, old_end);
    let mut new_tokens = Tokens::new(new, prefix, new_end);
    let whole_budget = 4 * (old_tokens.len() + new_tokens.len()) + MYERS_BUDGET / 20;
    let mut runs = myers(&old_tokens, &new_tokens, whole_budget);
    if runs.is_none() {
        let s = common_suffix(&ob[prefix..], &nb[prefix..]);
        (old_end, new_end) = (old.len() - s, new.len() - s);
        let starts_line = |b: &[u8], i: usize| i == 0 || b[i - 1] == b'\n';
        if !(starts_line(ob, old_end) && starts_line(nb, new_end)) {
            match memchr(b'\n', &ob[old_end..]) {
                Some(i) => {
                    old_end += i + 1;
                    new_end += i + 1;
                }
                None => (old_end, new_end) = (old.len(), new.len()),
            }
        }
        old_tokens = Tokens::new(old, prefix, old_end);
        new_tokens = Tokens::new(new, prefix, new_end);
        runs = myers(&old_tokens, &new_tokens, MYERS_BUDGET);
    }
    let runs = runs.unwrap_or_else(|| {
        [
            (Kind::Removed, old_tokens.len()),
            (Kind::Added, new_tokens.len()),
        ]
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .collect()
    });

    let mut parts: Vec<Part> = Vec::with_capacity(runs.len() + 2);
    let mut push = |part: Part| {
        if part.start == part.end {
            return;
        }
        if let Some(last) = parts.last_mut()
            && last.kind == Kind::Common
            && part.kind == Kind::Common
        {
            last.end = part.end;
            return;
        }
        parts.push(part);
    };
    push(Part {
        kind: Kind::Common,
        start: 0,
        end: prefix,
    });
    let (mut oi, mut ni) = (0usize, 0usize);
    for (kind, count) in runs {
        let (start, end) = match kind {
            Kind::Added => new_tokens.span(ni, count),
            Kind::Common | Kind::Removed => old_tokens.span(oi, count),
        };
        push(Part { kind, start, end });
        if kind != Kind::Added {
            oi += count;
        }
        if kind != Kind::Removed {
            ni += count;
        }
    }
    push(Part {
        kind: Kind::Common,
        start: old_end,
        end: old.len(),
    });
    parts
}

/// Steps (diagonals tried plus lines compared) the middle's diff may take before it gives up.
const MYERS_BUDGET: usize = 20_000_000;

/// A run of jsdiff's result as a linked list (jsdiff's `lastComponent`).
struct Component {
    kind: Kind,
    count: usize,
    prev: Option<Rc<Component>>,
}

impl Drop for Component {
    // Iteratively, so a long list cannot overflow the stack.
    fn drop(&mut self) {
        let mut next = self.prev.take();
        while let Some(rc) = next {
            match Rc::try_unwrap(rc) {
                Ok(mut c) => next = c.prev.take(),
                Err(_) => break,
            }
        }
    }
}

#[derive(Clone)]
struct PathHead {
    old_pos: isize,
    last: Option<Rc<Component>>,
}

fn add_to_path(path: &PathHead, kind: Kind, old_inc: isize) -> PathHead {
    let last = match &path.last {
        Some(last) if last.kind == kind => Component {
            kind,
            count: last.count + 1,
            prev: last.prev.clone(),
        },
        _ => Component {
            kind,
            count: 1,
            prev: path.last.clone(),
        },
    };
    PathHead {
        old_pos: path.old_pos + old_inc,
        last: Some(Rc::new(last)),
    }
}

/// jsdiff's `extractCommon`: follows the diagonal while the tokens agree; the new position.
fn extract_common(
    path: &mut PathHead,
    old: &Tokens<'_>,
    new: &Tokens<'_>,
    diagonal: isize,
    budget: &mut usize,
) -> isize {
    let (old_len, new_len) = (old.len() as isize, new.len() as isize);
    let mut old_pos = path.old_pos;
    let mut new_pos = old_pos - diagonal;
    let mut common = 0;
    while new_pos + 1 < new_len
        && old_pos + 1 < old_len
        && old.get((old_pos + 1) as usize) == new.get((new_pos + 1) as usize)
    {
        new_pos += 1;
        old_pos += 1;
        common += 1;
    }
    *budget = budget.saturating_sub(common);
    if common > 0 {
        path.last = Some(Rc::new(Component {
            kind: Kind::Common,
            count: common,
            prev: path.last.take(),
        }));
    }
    path.old_pos = old_pos;
    new_pos
}

fn build_runs(last: Option<Rc<Component>>) -> Vec<(Kind, usize)> {
    let mut runs = Vec::new();
    let mut node = last.as_deref();
    while let Some(c) = node {
        runs.push((c.kind, c.count));
        node = c.prev.as_deref();
    }
    runs.reverse();
    runs
}

/// jsdiff's `bestPath`: the furthest path on each diagonal, grown as diagonals are reached.
#[derive(Default)]
struct Diagonals {
    /// Diagonals 0, 1, 2, …
    up: Vec<Option<PathHead>>,
    /// Diagonals -1, -2, …
    down: Vec<Option<PathHead>>,
}

impl Diagonals {
    fn slot(&mut self, d: isize) -> &mut Option<PathHead> {
        let (list, i) = if d >= 0 {
            (&mut self.up, d as usize)
        } else {
            (&mut self.down, (-d - 1) as usize)
        };
        if list.len() <= i {
            list.resize(i + 1, None);
        }
        &mut list[i]
    }

    fn get(&self, d: isize) -> Option<&PathHead> {
        if d >= 0 {
            self.up.get(d as usize)?.as_ref()
        } else {
            self.down.get((-d - 1) as usize)?.as_ref()
        }
    }
}

/// jsdiff 8's Myers diff (`Diff.diffWithOptionsObj`), with its tie-breaks: the runs of common,
/// removed and added tokens. `None` if it would take more than `budget` steps.
fn myers(old: &Tokens<'_>, new: &Tokens<'_>, mut budget: usize) -> Option<Vec<(Kind, usize)>> {
    let (old_len, new_len) = (old.len() as isize, new.len() as isize);
    let max_edit = old_len + new_len;
    let mut best = Diagonals::default();

    let mut first = PathHead {
        old_pos: -1,
        last: None,
    };
    let new_pos = extract_common(&mut first, old, new, 0, &mut budget);
    if first.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
        return Some(build_runs(first.last));
    }
    *best.slot(0) = Some(first);
    let (mut min_diagonal, mut max_diagonal) = (isize::MIN, isize::MAX);
    let mut edit_len = 1;
    while edit_len <= max_edit {
        let mut d = min_diagonal.max(-edit_len);
        while d <= max_diagonal.min(edit_len) {
            if budget == 0 {
                return None;
            }
            budget -= 1;
            let remove_path = best.slot(d - 1).take();
            let add_path = best.get(d + 1);
            let can_add = add_path.is_some_and(|p| {
                let np = p.old_pos - d;
                0 <= np && np < new_len
            });
            let can_remove = remove_path
                .as_ref()
                .is_some_and(|p| p.old_pos + 1 < old_len);
            // jsdiff: extend the path that is farthest along the old text, adding on a tie.
            let head = match (add_path, &remove_path) {
                (Some(add), Some(remove)) if can_add && can_remove => {
                    if remove.old_pos < add.old_pos {
                        Some(add_to_path(add, Kind::Added, 0))
                    } else {
                        Some(add_to_path(remove, Kind::Removed, 1))
                    }
                }
                (Some(add), _) if can_add => Some(add_to_path(add, Kind::Added, 0)),
                (_, Some(remove)) if can_remove => Some(add_to_path(remove, Kind::Removed, 1)),
                _ => None,
            };
            let Some(mut head) = head else {
                *best.slot(d) = None;
                d += 2;
                continue;
            };
            let new_pos = extract_common(&mut head, old, new, d, &mut budget);
            if head.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
                return Some(build_runs(head.last));
            }
            if head.old_pos + 1 >= old_len {
                max_diagonal = max_diagonal.min(d - 1);
            }
            if new_pos + 1 >= new_len {
                min_diagonal = min_diagonal.max(d + 1);
            }
            *best.slot(d) = Some(head);
            d += 2;
        }
        edit_len += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MAIN_RS: &str =
        "fn main() {\n    println!(\"hello\");\n}\n\nfn helper(x: u32) -> u32 {\n    x + 1\n}\n";

    fn apply(file: &str, edits: &[(&str, &str)]) -> Result<(String, Diff), String> {
        apply_at("a.txt", file, edits)
    }

    fn apply_at(path: &str, file: &str, edits: &[(&str, &str)]) -> Result<(String, Diff), String> {
        let edits: Vec<Edit> = edits.iter().map(|(o, n)| Edit::new(o, n)).collect();
        apply_edits(file.as_bytes(), &edits, path)
            .map(|a| (String::from_utf8(a.bytes).unwrap(), a.diff))
    }

    fn golden(name: &str) -> Value {
        let path = format!("/work/shared/conformance/tools/golden/{name}.json");
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).unwrap(),
            Err(_) => Value::Null,
        }
    }

    /// The diff and first changed line, checked against pi's golden when it is there.
    fn check_golden(name: &str, diff: &Diff, expected_diff: &str, expected_line: usize) {
        assert_eq!(diff.diff, expected_diff);
        assert_eq!(diff.first_changed_line, Some(expected_line));
        let g = golden(name);
        if !g.is_null() {
            assert_eq!(g["details"]["diff"], expected_diff, "{name}");
            assert_eq!(g["details"]["firstChangedLine"], expected_line, "{name}");
        }
    }

    #[test]
    fn single_edit_matches_pis_golden() {
        let (file, diff) =
            apply(MAIN_RS, &[("println!(\"hello\");", "println!(\"bye\");")]).unwrap();
        assert_eq!(file, MAIN_RS.replace("hello", "bye"));
        check_golden(
            "edit-single",
            &diff,
            " 1 fn main() {\n-2     println!(\"hello\");\n+2     println!(\"bye\");\n 3 }\n 4 \n 5 fn helper(x: u32) -> u32 {\n 6     x + 1\n   ...",
            2,
        );
    }

    #[test]
    fn multi_edit_matches_pis_golden() {
        let (file, diff) =
            apply(MAIN_RS, &[("fn main()", "fn start()"), ("x + 1", "x + 2")]).unwrap();
        assert_eq!(
            file,
            MAIN_RS.replace("main", "start").replace("x + 1", "x + 2")
        );
        check_golden(
            "edit-multi",
            &diff,
            "-1 fn main() {\n+1 fn start() {\n 2     println!(\"hello\");\n 3 }\n 4 \n 5 fn helper(x: u32) -> u32 {\n-6     x + 1\n+6     x + 2\n 7 }",
            1,
        );
    }

    #[test]
    fn crlf_is_kept_and_diffed_as_lf() {
        let (file, diff) = apply("one\r\ntwo\r\nthree\r\n", &[("two", "TWO")]).unwrap();
        assert_eq!(file, "one\r\nTWO\r\nthree\r\n");
        check_golden(
            "edit-crlf-preserved",
            &diff,
            " 1 one\n-2 two\n+2 TWO\n 3 three",
            2,
        );
        // A CRLF oldText matches too, and a multi-line newText gets CRLF.
        let (file, _) = apply("one\r\ntwo\r\nthree\r\n", &[("one\r\ntwo", "1\n2\n2b")]).unwrap();
        assert_eq!(file, "1\r\n2\r\n2b\r\nthree\r\n");
    }

    #[test]
    fn mixed_line_endings_outside_the_edit_are_kept() {
        // pi would rewrite every line with the first line's ending.
        let (file, _) = apply("a\r\nb\nc\rd\r\n", &[("b", "B\nB2")]).unwrap();
        assert_eq!(file, "a\r\nB\r\nB2\nc\rd\r\n");
        let (file, _) = apply("a\nb\r\nc\n", &[("c", "C")]).unwrap();
        assert_eq!(file, "a\nb\r\nC\n");
    }

    #[test]
    fn bom_is_kept_and_not_matched() {
        let (file, diff) = apply("\u{FEFF}abc\n", &[("abc", "xyz")]).unwrap();
        assert_eq!(file, "\u{FEFF}xyz\n");
        assert_eq!(diff.diff, "-1 abc\n+1 xyz");
        let (file, _) = apply("\u{FEFF}one\r\ntwo\r\n", &[("one\ntwo", "1\n2")]).unwrap();
        assert_eq!(file, "\u{FEFF}1\r\n2\r\n");
    }

    #[test]
    fn legacy_golden_diff() {
        let (file, diff) = apply("abc\n", &[("abc", "xyz")]).unwrap();
        assert_eq!(file, "xyz\n");
        check_golden("edit-legacy-args", &diff, "-1 abc\n+1 xyz", 1);
    }

    #[test]
    fn errors_are_pis_texts() {
        assert_eq!(
            apply(MAIN_RS, &[("does not exist", "x")]).unwrap_err(),
            "Could not find the exact text in a.txt. The old text must match exactly including all whitespace and newlines."
        );
        assert_eq!(
            apply("dup\nmid\ndup\n", &[("dup", "one")]).unwrap_err(),
            "Found 2 occurrences of the text in a.txt. The text must be unique. Please provide more context to make it unique."
        );
        assert_eq!(
            apply("abcdef\n", &[("abcd", "X"), ("cdef", "Y")]).unwrap_err(),
            "edits[0] and edits[1] overlap in a.txt. Merge them into one edit or target disjoint regions."
        );
        // Sorted by position: the later edit in the list can be named first.
        assert_eq!(
            apply("abcdef\n", &[("cdef", "Y"), ("abcd", "X")]).unwrap_err(),
            "edits[1] and edits[0] overlap in a.txt. Merge them into one edit or target disjoint regions."
        );
        assert_eq!(
            apply("abc\n", &[("", "X")]).unwrap_err(),
            "oldText must not be empty in a.txt."
        );
        assert_eq!(
            apply("abc\n", &[("abc", "abc")]).unwrap_err(),
            "No changes made to a.txt. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
        );
    }

    #[test]
    fn multi_edit_error_variants() {
        assert_eq!(
            apply("abc\n", &[("a", "b"), ("nope", "x")]).unwrap_err(),
            "Could not find edits[1] in a.txt. The oldText must match exactly including all whitespace and newlines."
        );
        assert_eq!(
            apply("dup dup x\n", &[("x", "y"), ("dup", "one")]).unwrap_err(),
            "Found 2 occurrences of edits[1] in a.txt. Each oldText must be unique. Please provide more context to make it unique."
        );
        assert_eq!(
            apply("abc\n", &[("a", "b"), ("", "x")]).unwrap_err(),
            "edits[1].oldText must not be empty in a.txt."
        );
        assert_eq!(
            apply("abc\n", &[("a", "a"), ("b", "b")]).unwrap_err(),
            "No changes made to a.txt. The replacements produced identical content."
        );
        // The first failing edit, in order, is the one reported.
        assert!(
            apply("dup dup\n", &[("dup", "x"), ("nope", "y")])
                .unwrap_err()
                .starts_with("Found 2 occurrences of edits[0]")
        );
    }

    #[test]
    fn golden_error_texts() {
        for (name, path, file, edits) in [
            (
                "edit-not-found",
                "src/main.rs",
                MAIN_RS,
                vec![("does not exist", "x")],
            ),
            (
                "edit-not-unique",
                "a.txt",
                "dup\nmid\ndup\n",
                vec![("dup", "one")],
            ),
            (
                "edit-overlap",
                "a.txt",
                "abcdef\n",
                vec![("abcd", "X"), ("cdef", "Y")],
            ),
            ("edit-empty-old", "a.txt", "abc\n", vec![("", "X")]),
            ("edit-no-change", "a.txt", "abc\n", vec![("abc", "abc")]),
        ] {
            let g = golden(name);
            if g.is_null() {
                continue;
            }
            let err = apply_at(path, file, &edits).unwrap_err();
            assert_eq!(err, g["content"][0]["text"], "{name}");
        }
    }

    #[test]
    fn edits_match_the_original_not_each_other() {
        // The second edit's oldText is the first's newText: it matches the original "b".
        let (file, _) = apply("a b\n", &[("a", "b"), ("b", "c")]).unwrap();
        assert_eq!(file, "b c\n");
        // Touching edits are not overlapping.
        let (file, _) = apply("abcdef\n", &[("abc", "1"), ("def", "2")]).unwrap();
        assert_eq!(file, "12\n");
    }

    #[test]
    fn uniqueness_is_counted_on_normalized_text() {
        // pi counts occurrences after normalization: the curly twin makes the plain one
        // ambiguous even though it matches exactly.
        assert_eq!(
            apply("say \"hi\"\nsay “hi”\n", &[("say \"hi\"", "x")]).unwrap_err(),
            "Found 2 occurrences of the text in a.txt. The text must be unique. Please provide more context to make it unique."
        );
    }

    #[test]
    fn fuzzy_smart_quotes_replace_only_the_matched_bytes() {
        let (file, diff) = apply(
            "say “hello” to them\n",
            &[("say \"hello\" to them", "say \"bye\" to them")],
        )
        .unwrap();
        // Here pi's file is the same…
        assert_eq!(file, "say \"bye\" to them\n");
        // …but the diff shows the line as it was (pi shows it normalized:
        // `-1 say "hello" to them`).
        assert_eq!(diff.diff, "-1 say “hello” to them\n+1 say \"bye\" to them");
        assert_eq!(diff.first_changed_line, Some(1));

        // The deviation: the rest of the file keeps its smart quotes, dashes and spaces.
        let file = "a = ‘x’\nsay “hello” — ok\nb = “y”  \n";
        let (out, _) = apply(file, &[("say \"hello\" - ok", "say \"bye\" - ok")]).unwrap();
        assert_eq!(out, "a = ‘x’\nsay \"bye\" - ok\nb = “y”  \n");
    }

    #[test]
    fn fuzzy_trailing_whitespace_replaces_only_the_matched_bytes() {
        let (file, diff) = apply(
            "keep   \nchange me   \nend\n",
            &[("change me\nend", "changed\nend")],
        )
        .unwrap();
        // pi: "keep\nchanged\nend\n" (every line's trailing whitespace dropped).
        assert_eq!(file, "keep   \nchanged\nend\n");
        assert_eq!(diff.diff, " 1 keep   \n-2 change me   \n+2 changed\n 3 end");
        assert_eq!(diff.first_changed_line, Some(2));
        // The golden's file differs from ours exactly on the untouched first line.
        let g = golden("edit-fuzzy-trailing-ws");
        if !g.is_null() {
            assert_eq!(g["files"]["a.txt"], "keep\nchanged\nend\n");
        }
    }

    #[test]
    fn fuzzy_match_takes_in_the_whitespace_it_dropped() {
        // The match ends at a line end: that line's trailing spaces go with it.
        let (file, _) = apply("x\nfoo   \nbar\n", &[("foo\nbar", "baz")]).unwrap();
        assert_eq!(file, "x\nbaz\n");
        // A match starting at a line end takes in the whitespace before it.
        let (file, _) = apply("“q” \nnext\n", &[("\"q\"\nnext", "joined")]).unwrap();
        assert_eq!(file, "joined\n");
        let (file, _) = apply("a “x”  \nnext\n", &[("\nnext ", "")]).unwrap();
        assert_eq!(file, "a “x”\n");
        // Two edits meeting at a dropped run of whitespace do not overlap.
        let (file, _) = apply("“a”  \n\nb\n", &[("\"a\"", "A"), ("\n\nb", "B")]).unwrap();
        assert_eq!(file, "AB\n");
    }

    #[test]
    fn fuzzy_dashes_spaces_and_nfkc() {
        let (file, _) = apply("x — y\u{00A0}z\n", &[("x - y z", "ok")]).unwrap();
        assert_eq!(file, "ok\n");
        // NFKC: a ligature and full-width letters.
        let (file, _) = apply("the ﬁle is ＡＢ\nkeep ﬁ\n", &[("file is AB", "doc")]).unwrap();
        assert_eq!(file, "the doc\nkeep ﬁ\n");
        // A match starting inside a ligature keeps the ligature's other half, normalized.
        let (file, _) = apply("ﬁx\n", &[("ix", "IX")]).unwrap_err_or_ok();
        assert_eq!(file, "fIX\n");
    }

    trait UnwrapEither {
        fn unwrap_err_or_ok(self) -> (String, Diff);
    }

    impl UnwrapEither for Result<(String, Diff), String> {
        fn unwrap_err_or_ok(self) -> (String, Diff) {
            match self {
                Ok(v) => v,
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn invalid_utf8_outside_the_edit_is_kept() {
        let raw = b"caf\xE9 ok\nline two\n\xFF\xFE end\n";
        let applied = apply_edits(raw, &[Edit::new("two", "2")], "a.txt").unwrap();
        assert_eq!(applied.bytes, b"caf\xE9 ok\nline 2\n\xFF\xFE end\n");
        assert_eq!(
            applied.diff.diff,
            " 1 caf\u{FFFD} ok\n-2 line two\n+2 line 2\n 3 \u{FFFD}\u{FFFD} end"
        );
    }

    #[test]
    fn a_not_found_edit_names_the_closest_region() {
        let file =
            "fn a() {}\n\nfn main() {\n    let x = compute(1, 2);\n    println!(\"{x}\");\n}\n";
        let err = apply(file, &[("let x = compute(1, 3);\nprintln!(\"{x}\");", "y")]).unwrap_err();
        assert_eq!(
            err,
            "Could not find the exact text in a.txt. The old text must match exactly including all whitespace and newlines.\nThe closest match is at lines 4-5:\n    let x = compute(1, 2);\n    println!(\"{x}\");"
        );
        let err = apply(file, &[("fn mian() {", "y")]).unwrap_err();
        assert!(
            err.ends_with("\nThe closest match is at line 3:\nfn main() {"),
            "{err}"
        );
        // Multi-edit wording, with the hint for the edit that failed.
        let err = apply(file, &[("fn a()", "fn b()"), ("println!(\"{y}\");", "z")]).unwrap_err();
        assert!(
            err.starts_with("Could not find edits[1] in a.txt."),
            "{err}"
        );
        assert!(err.ends_with("at line 5:\n    println!(\"{x}\");"), "{err}");
        // Nothing like it: pi's text alone.
        assert!(
            !apply(file, &[("zzz qqq", "y")])
                .unwrap_err()
                .contains("closest")
        );
    }

    #[test]
    fn closest_region_is_linear_and_bounded() {
        let base: String = (0..5000).map(|i| format!("line number {i}\n")).collect();
        let hint = closest_region(&base, &base, "line nmber 4321").unwrap();
        assert_eq!(
            hint,
            "\nThe closest match is at line 4322:\nline number 4321"
        );
        assert_eq!(closest_region(&base, &base, "  \n \n"), None);
        let long: String = (0..100).map(|i| format!("line number {i}\n")).collect();
        let hint = closest_region(&base, &base, &long.replace("number 5", "numbr 5")).unwrap();
        assert!(
            hint.starts_with("\nThe closest match is at lines 1-100:\n"),
            "{hint}"
        );
        assert!(hint.ends_with("\n... (60 more lines)"), "{hint}");
    }

    #[test]
    fn prepare_arguments_rewrites_legacy_and_string_forms() {
        let map = |v: Value| v.as_object().cloned().unwrap();
        assert_eq!(
            prepare_arguments(&map(json!({"path": "a", "oldText": "x", "newText": "y"}))),
            Some(map(
                json!({"path": "a", "edits": [{"oldText": "x", "newText": "y"}]})
            ))
        );
        assert_eq!(
            prepare_arguments(&map(
                json!({"path": "a", "edits": "[{\"oldText\": \"x\", \"newText\": \"y\"}]"})
            )),
            Some(map(
                json!({"path": "a", "edits": [{"oldText": "x", "newText": "y"}]})
            ))
        );
        // Both: the legacy pair is appended to the parsed list.
        assert_eq!(
            prepare_arguments(&map(json!({
                "path": "a",
                "edits": "[{\"oldText\": \"1\", \"newText\": \"2\"}]",
                "oldText": "x",
                "newText": "y"
            }))),
            Some(map(json!({"path": "a", "edits": [
                {"oldText": "1", "newText": "2"},
                {"oldText": "x", "newText": "y"}
            ]})))
        );
        // Already right, or not fixable: left for validation to report.
        assert_eq!(
            prepare_arguments(&map(
                json!({"path": "a", "edits": [{"oldText": "x", "newText": "y"}]})
            )),
            None
        );
        assert_eq!(
            prepare_arguments(&map(json!({"path": "a", "edits": "not json"}))),
            None
        );
        assert_eq!(
            prepare_arguments(&map(json!({"path": "a", "edits": "{\"a\": 1}"}))),
            None
        );
        assert_eq!(
            prepare_arguments(&map(json!({"path": "a", "oldText": "x"}))),
            None
        );
    }

    #[test]
    fn fuzzy_normalization_is_pis() {
        // Expected values from pi's `normalizeForFuzzyMatch` (node 20).
        for (input, expected) in [
            ("say “hello”  \nfoo\u{00A0}\n", "say \"hello\"\nfoo\n"),
            ("ﬁle\u{2014}x\u{2011}y", "file-x-y"),
            ("e\u{0301}  \t\n\u{3000}x\u{3000}", "\u{00E9}\n x"),
            ("\u{FEFF}a \u{2028}", "\u{FEFF}a"),
            ("Ａ＋㎒ …", "A+MHz ..."),
            ("\u{1100}\u{1161}\u{11A8}", "\u{AC01}"),
            ("x \u{0085}", "x \u{0085}"),
        ] {
            assert_eq!(normalize_for_fuzzy_match(input), expected, "{input:?}");
        }
    }

    #[test]
    fn view_maps_back_to_the_source() {
        let src = "a “b”  \nc";
        let v = fuzzy_view(src);
        assert_eq!(v.text, "a \"b\"\nc");
        // The whole normalized text maps to the whole source.
        let r = v.source_range(0, v.text.len());
        assert_eq!((r.start, r.end, r.prefix, r.suffix), (0, src.len(), "", ""));
        // `"b"` is the curly quotes and b.
        let r = v.source_range(2, 5);
        assert_eq!(&src[r.start..r.end], "“b”  ");
        let lf = lf_view(b"x\r\ny\rz\xC0w");
        assert_eq!(lf.text, "x\ny\nz\u{FFFD}w");
        let r = lf.source_range(2, lf.text.len());
        assert_eq!((r.start, r.end), (3, 8));
    }

    #[test]
    fn diff_follows_jsdiff() {
        // Expected values from pi's `generateDiffString` (jsdiff 8).
        for (old, new, expected, line) in [
            ("abc", "abc\nxyz", "-1 abc\n+1 abc\n+2 xyz", 1),
            ("a\n", "a\nb\n", " 1 a\n+2 b", 2),
            (
                "b\nb\nb\nb\n}\na\n}\na\nb\nb\n  \nc\n\n}\n\n",
                "b\nb\nb\n}\nb\n}\na\nb\nb\n  \nc\n\n}\n\n",
                "  1 b\n  2 b\n  3 b\n+ 4 }\n  4 b\n  5 }\n  6 a\n- 7 }\n- 8 a\n  9 b\n 10 b\n 11   \n 12 c\n    ...",
                4,
            ),
            (
                "c\na\nb\n  \n  \nc\nx y\n\nc\nx y\n",
                "c\na\n  \nb\n  \nc\n}\nx y\n\nc\nx y\nx y\n",
                "  1 c\n  2 a\n+ 3   \n  3 b\n  4   \n- 5   \n  6 c\n+ 7 }\n  7 x y\n  8 \n  9 c\n 10 x y\n+12 x y",
                3,
            ),
        ] {
            let d = generate_diff(old, new, DIFF_CONTEXT);
            assert_eq!(d.diff, expected, "{old:?} -> {new:?}");
            assert_eq!(d.first_changed_line, Some(line));
        }
        // Long unchanged stretches between and around changes are elided.
        let old: String = (1..=30).map(|i| format!("{i}\n")).collect();
        let new = old
            .replace("\n3\n", "\nthree\n")
            .replace("\n25\n", "\n25b\n");
        assert_eq!(
            generate_diff(&old, &new, DIFF_CONTEXT).diff,
            "  1 1\n  2 2\n- 3 3\n+ 3 three\n  4 4\n  5 5\n  6 6\n  7 7\n    ...\n 21 21\n 22 22\n 23 23\n 24 24\n-25 25\n+25 25b\n 26 26\n 27 27\n 28 28\n 29 29\n    ..."
        );
        assert_eq!(
            generate_diff("same\n", "same\n", DIFF_CONTEXT).first_changed_line,
            None
        );
    }

    #[test]
    fn a_huge_middle_falls_back_to_removed_then_added() {
        let old: String = (0..3000).map(|i| format!("old {i}\n")).collect();
        let new: String = (0..3000).map(|i| format!("new {i}\n")).collect();
        let old_tokens = Tokens::new(&old, 0, old.len());
        let new_tokens = Tokens::new(&new, 0, new.len());
        assert!(myers(&old_tokens, &new_tokens, 1000).is_none());
        let d = generate_diff(&old, &new, DIFF_CONTEXT);
        assert!(d.diff.starts_with("-   1 old 0\n"));
        assert!(d.diff.ends_with("+3000 new 2999"));
    }

    #[test]
    fn one_line_in_a_10_mb_file() {
        // Linear by construction: matching is memmem, the views are one pass, and the diff
        // sets the common prefix aside and follows the common suffix as one snake.
        let mut file = String::with_capacity(10 << 20);
        let mut i = 0;
        while file.len() < 10 << 20 {
            file.push_str(&format!(
                "line {i:07} of the big file, with some text to pad it\n"
            ));
            i += 1;
        }
        let target = format!("line {:07} of", i / 2);
        let (out, diff) = apply(&file, &[(&target, "CHANGED of")]).unwrap();
        assert_eq!(out.len(), file.len() - target.len() + "CHANGED of".len());
        assert!(out.contains("\nCHANGED of the big file"));
        assert_eq!(diff.first_changed_line, Some(i / 2 + 1));
        // `...`, 4 lines of context, the change, 4 lines, `...`.
        assert_eq!(diff.diff.lines().count(), 1 + 4 + 2 + 4 + 1);
    }
}
