//! pi's strict JSON-lines framing of stdin (`attachJsonlLineReader`): records end at `\n`
//! only — never at U+2028 or U+2029, which are valid inside JSON strings — a trailing `\r`
//! is stripped, and an unterminated last record is still a record. Bytes that are not UTF-8
//! become U+FFFD, as Node's decoder makes them. Unlike pi, a line has a length cap: a longer
//! one is skipped up to its `\n` without being held in memory.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

/// One record of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line, without its `\n` (and `\r`).
    Text(String),
    /// A line longer than the cap, skipped.
    TooLong,
}

/// Reads [`Line`]s from an async reader.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no `\n`.
    scanned: usize,
    max: usize,
    /// Skipping the rest of a line over the cap.
    skipping: bool,
    eof: bool,
}

/// How much is read at a time.
const CHUNK: usize = 64 * 1024;

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader of lines up to `max` bytes (without the `\n`).
    pub(crate) fn new(inner: R, max: usize) -> Self {
        LineReader {
            inner,
            buf: Vec::new(),
            scanned: 0,
            max,
            skipping: false,
            eof: false,
        }
    }

    /// The next line; `None` at the end of the input.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: what was read stays in the reader's buffer (the only await is a read
    /// into it, which takes nothing when dropped).
    pub(crate) async fn next_line(&mut self) -> io::Result<Option<Line>> {
        loop {
            if let Some(pos) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                let end = self.scanned + pos;
                let line = if std::mem::take(&mut self.skipping) {
                    Line::TooLong
                } else {
                    match self.text(end) {
                        Some(text) => Line::Text(text),
                        None => Line::TooLong,
                    }
                };
                self.buf.drain(..=end);
                self.scanned = 0;
                return Ok(Some(line));
            }
            self.scanned = self.buf.len();
            // (`max + 1`: a `\r` before the `\n` does not count.)
            if self.buf.len() > self.max + 1 {
                // Over the cap without its end yet: forget it, and skip to its `\n`.
                self.skipping = true;
                self.buf.clear();
                self.scanned = 0;
            }
            if self.eof {
                if std::mem::take(&mut self.skipping) {
                    return Ok(Some(Line::TooLong));
                }
                if self.buf.is_empty() {
                    return Ok(None);
                }
                let end = self.buf.len();
                let line = match self.text(end) {
                    Some(text) => Line::Text(text),
                    None => Line::TooLong,
                };
                self.buf.clear();
                self.scanned = 0;
                return Ok(Some(line));
            }
            self.buf.reserve(CHUNK);
            if self.inner.read_buf(&mut self.buf).await? == 0 {
                self.eof = true;
            }
        }
    }

    /// `buf[..end]` without a trailing `\r`, decoded; `None` when over the cap.
    fn text(&self, end: usize) -> Option<String> {
        let mut line = &self.buf[..end];
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        (line.len() <= self.max).then(|| String::from_utf8_lossy(line).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().await.unwrap() {
            out.push(line);
        }
        out
    }

    fn text(s: &str) -> Line {
        Line::Text(s.to_owned())
    }

    #[tokio::test]
    async fn lf_only_framing() {
        let input = "a\nb\r\n\n\u{2028}x\u{2029}\r\nlast".as_bytes();
        assert_eq!(
            lines(input, 100).await,
            [
                text("a"),
                text("b"),
                text(""),
                text("\u{2028}x\u{2029}"),
                text("last")
            ]
        );
        // Only one `\r` is stripped, only at the end; a lone `\r` is no separator.
        assert_eq!(
            lines(b"a\rb\r\r\n\r", 100).await,
            [text("a\rb\r"), text("")]
        );
        assert!(lines(b"", 100).await.is_empty());
        assert_eq!(lines(b"\n", 100).await, [text("")]);
    }

    #[tokio::test]
    async fn invalid_utf8_becomes_replacement_characters() {
        assert_eq!(lines(b"a\xffb\n", 100).await, [text("a\u{fffd}b")]);
    }

    #[tokio::test]
    async fn lines_over_the_cap_are_skipped_whole() {
        let long = "x".repeat(200);
        let input = format!("ok\n{long}\nfine\r\n{long}");
        assert_eq!(
            lines(input.as_bytes(), 10).await,
            [text("ok"), Line::TooLong, text("fine"), Line::TooLong]
        );
        // Exactly at the cap, with or without `\r`.
        assert_eq!(
            lines(b"0123456789\r\n0123456789\n01234567890\n", 10).await,
            [text("0123456789"), text("0123456789"), Line::TooLong]
        );
    }

    #[tokio::test]
    async fn a_huge_line_is_not_held_in_memory() {
        // A line of 1 MiB through a reader that delivers 4 KiB at a time, cap 1 KiB.
        let (mut tx, rx) = tokio::io::duplex(4096);
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for _ in 0..256 {
                tx.write_all(&[b'y'; 4096]).await.unwrap();
            }
            tx.write_all(b"\n{}\n").await.unwrap();
        });
        let mut reader = LineReader::new(rx, 1024);
        assert_eq!(reader.next_line().await.unwrap(), Some(Line::TooLong));
        assert!(
            reader.buf.capacity() < 4 * CHUNK,
            "{}",
            reader.buf.capacity()
        );
        assert_eq!(reader.next_line().await.unwrap(), Some(text("{}")));
        writer.await.unwrap();
        assert_eq!(reader.next_line().await.unwrap(), None);
    }

    #[tokio::test]
    async fn split_reads_and_cancelled_reads_lose_nothing() {
        let (mut tx, rx) = tokio::io::duplex(64);
        let mut reader = LineReader::new(rx, 1000);
        use tokio::io::AsyncWriteExt;
        tx.write_all("{\"a\":\"é".as_bytes()[..6].as_ref())
            .await
            .unwrap();
        // Nothing complete yet: a read that is dropped takes nothing.
        let r =
            tokio::time::timeout(std::time::Duration::from_millis(20), reader.next_line()).await;
        assert!(r.is_err());
        tx.write_all(&"{\"a\":\"é".as_bytes()[6..]).await.unwrap();
        tx.write_all(b"\"}\n").await.unwrap();
        assert_eq!(
            reader.next_line().await.unwrap(),
            Some(text("{\"a\":\"é\"}"))
        );
    }
}
