//! Output limits shared by the tools: pi's 2000 lines / 50 KiB, cut from the head (`read`) or
//! the tail (`bash`), never mid-line except a tail whose last line alone is over the byte limit.

use serde::Serialize;

/// Lines a tool shows at most (pi's `DEFAULT_MAX_LINES`).
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Bytes a tool shows at most (pi's `DEFAULT_MAX_BYTES`, 50 KiB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Characters of one `grep` match line (pi's `GREP_MAX_LINE_LENGTH`).
pub const GREP_MAX_LINE_LENGTH: usize = 500;

/// Which limit cut the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    /// The line limit.
    Lines,
    /// The byte limit.
    Bytes,
}

/// What [`truncate_head`] or [`truncate_tail`] kept, in pi's `details.truncation` shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Truncation {
    /// The text kept.
    pub content: String,
    /// Whether anything was cut.
    pub truncated: bool,
    /// Which limit cut it (`None` when nothing was cut).
    pub truncated_by: Option<TruncatedBy>,
    /// Lines of the input (`split('\n')` count: a trailing newline makes an empty last line).
    pub total_lines: usize,
    /// Bytes of the input (UTF-8).
    pub total_bytes: usize,
    /// Lines kept.
    pub output_lines: usize,
    /// Bytes kept.
    pub output_bytes: usize,
    /// The first line kept is the end of a longer line (tail only).
    pub last_line_partial: bool,
    /// The first line alone is over the byte limit, so nothing was kept (head only).
    pub first_line_exceeds_limit: bool,
    /// The line limit applied.
    pub max_lines: usize,
    /// The byte limit applied.
    pub max_bytes: usize,
}

impl Truncation {
    fn whole(content: &str, total_lines: usize, max_lines: usize, max_bytes: usize) -> Self {
        Truncation {
            content: content.to_owned(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes: content.len(),
            output_lines: total_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines,
            max_bytes,
        }
    }
}

/// Keeps the first lines of `content` within `max_lines` and `max_bytes`, whole lines only.
///
/// ```
/// use pi_engine::tools::truncate_head;
///
/// let t = truncate_head("a\nb\nc", 2, 1024);
/// assert_eq!(t.content, "a\nb");
/// assert!(t.truncated);
/// ```
pub fn truncate_head(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let total_lines = memchr::memchr_iter(b'\n', content.as_bytes()).count() + 1;
    if total_lines <= max_lines && content.len() <= max_bytes {
        return Truncation::whole(content, total_lines, max_lines, max_bytes);
    }
    let mut t = Truncation::whole("", total_lines, max_lines, max_bytes);
    t.truncated = true;
    t.total_bytes = content.len();
    t.output_lines = 0;
    t.output_bytes = 0;
    let first_len = content.find('\n').unwrap_or(content.len());
    if first_len > max_bytes {
        t.truncated_by = Some(TruncatedBy::Bytes);
        t.first_line_exceeds_limit = true;
        return t;
    }
    let mut end = 0; // byte end of the kept prefix
    let mut lines = 0;
    let mut by = TruncatedBy::Lines;
    for line in content.split('\n').take(max_lines) {
        let cost = line.len() + usize::from(lines > 0);
        if end + cost > max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        end += cost;
        lines += 1;
    }
    t.content = content[..end].to_owned();
    t.truncated_by = Some(by);
    t.output_lines = lines;
    t.output_bytes = end;
    t
}

/// Keeps the last lines of `content` within `max_lines` and `max_bytes`. When the last line
/// alone is over the byte limit, its end is kept (at a character boundary).
///
/// ```
/// use pi_engine::tools::truncate_tail;
///
/// let t = truncate_tail("a\nb\nc", 2, 1024);
/// assert_eq!(t.content, "b\nc");
/// ```
pub fn truncate_tail(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let total_lines = memchr::memchr_iter(b'\n', content.as_bytes()).count() + 1;
    if total_lines <= max_lines && content.len() <= max_bytes {
        return Truncation::whole(content, total_lines, max_lines, max_bytes);
    }
    let mut t = Truncation::whole("", total_lines, max_lines, max_bytes);
    t.truncated = true;
    t.total_bytes = content.len();
    let mut start = content.len(); // byte start of the kept suffix
    let mut lines = 0;
    let mut bytes = 0;
    let mut by = TruncatedBy::Lines;
    for line in content.rsplit('\n') {
        if lines >= max_lines {
            break;
        }
        let cost = line.len() + usize::from(lines > 0);
        if bytes + cost > max_bytes {
            by = TruncatedBy::Bytes;
            if lines == 0 {
                let mut cut = line.len() - max_bytes;
                while !line.is_char_boundary(cut) {
                    cut += 1;
                }
                start = content.len() - (line.len() - cut);
                lines = 1;
                t.last_line_partial = true;
            }
            break;
        }
        bytes += cost;
        start -= cost;
        lines += 1;
    }
    t.content = content[start..].to_owned();
    t.truncated_by = Some(by);
    t.output_lines = lines;
    t.output_bytes = t.content.len();
    t
}

/// Cuts one line to `max_chars` (counted as JavaScript counts, in UTF-16 units) and appends
/// `... [truncated]`; returns whether it cut.
///
/// ```
/// use pi_engine::tools::truncate_line;
///
/// assert_eq!(truncate_line("abcdef", 3), ("abc... [truncated]".to_owned(), true));
/// assert_eq!(truncate_line("abc", 3), ("abc".to_owned(), false));
/// ```
pub fn truncate_line(line: &str, max_chars: usize) -> (String, bool) {
    let mut units = 0;
    for (i, c) in line.char_indices() {
        if units + c.len_utf16() > max_chars {
            return (format!("{}... [truncated]", &line[..i]), true);
        }
        units += c.len_utf16();
    }
    (line.to_owned(), false)
}

/// A byte count as pi prints it: `512B`, `1.5KB`, `2.0MB` (one decimal, halves rounded up as
/// JavaScript's `toFixed` does).
///
/// ```
/// use pi_engine::tools::format_size;
///
/// assert_eq!(format_size(512), "512B");
/// assert_eq!(format_size(50 * 1024), "50.0KB");
/// assert_eq!(format_size(1280), "1.3KB");
/// ```
pub fn format_size(bytes: usize) -> String {
    let tenths = |unit: u128| {
        let t = (bytes as u128 * 10 + unit / 2) / unit;
        format!("{}.{}", t / 10, t % 10)
    };
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{}KB", tenths(1024))
    } else {
        format!("{}MB", tenths(1024 * 1024))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_keeps_the_input_totals() {
        let t = truncate_head("aaaa\nbbbb\ncccc", 1, 100);
        assert_eq!((t.total_bytes, t.output_bytes), (14, 4));
        let t = truncate_tail("aaaa\nbbbb\ncccc", 1, 100);
        assert_eq!((t.total_bytes, t.output_bytes), (14, 4));
    }

    #[test]
    fn head_counts_lines_like_split() {
        let t = truncate_head("a\n", 10, 100);
        assert_eq!(t.total_lines, 2);
        assert!(!t.truncated);
    }

    #[test]
    fn head_stops_at_the_byte_limit_on_a_whole_line() {
        let t = truncate_head("aaaa\nbbbb\ncccc", 10, 9);
        assert_eq!(t.content, "aaaa\nbbbb");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
        assert_eq!(t.output_lines, 2);
    }

    #[test]
    fn head_flags_a_first_line_over_the_limit() {
        let t = truncate_head("aaaaaaaaaa\nb", 10, 5);
        assert!(t.first_line_exceeds_limit);
        assert_eq!(t.content, "");
        assert_eq!(t.output_lines, 0);
    }

    #[test]
    fn head_at_exactly_the_line_limit_is_by_lines() {
        let t = truncate_head("1\n2\n3\n4", 3, 100);
        assert_eq!(t.content, "1\n2\n3");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
    }

    #[test]
    fn tail_keeps_the_end_of_a_long_last_line_at_a_char_boundary() {
        let t = truncate_tail("x\nééééé", 10, 5);
        assert!(t.last_line_partial);
        assert_eq!(t.content, "éé");
        assert_eq!(t.output_lines, 1);
    }

    #[test]
    fn tail_by_lines() {
        let body: String = (1..=10).map(|i| format!("{i}\n")).collect();
        let t = truncate_tail(&body, 3, 1000);
        assert_eq!(t.content, "9\n10\n");
        assert_eq!(t.output_lines, 3);
        assert_eq!(t.total_lines, 11);
    }

    #[test]
    fn tail_by_bytes() {
        let t = truncate_tail("aaaa\nbbbb\ncccc", 10, 9);
        assert_eq!(t.content, "bbbb\ncccc");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
    }

    #[test]
    fn line_cut_counts_utf16_units() {
        // An emoji is two UTF-16 units: it does not fit in one.
        assert_eq!(truncate_line("😀", 1).0, "... [truncated]");
    }

    #[test]
    fn sizes_round_half_up() {
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(1024), "1.0KB");
        assert_eq!(format_size(1024 * 1024 * 5 / 4), "1.3MB");
        assert_eq!(format_size(1024 * 1024 + 1024 * 1024 / 20), "1.0MB");
    }

    #[test]
    fn truncation_serializes_in_pis_shape() {
        let v = serde_json::to_value(truncate_head("a\nb", 1, 100)).unwrap();
        assert_eq!(v["truncatedBy"], "lines");
        assert_eq!(v["firstLineExceedsLimit"], false);
        assert_eq!(v["maxBytes"], 100);
    }
}
