//! `read`: a text file's lines (the head, within 2000 lines / 50 KiB, with pi's notices for
//! continuing at an offset), or an image (png, jpg, gif, webp) as image content, resized as pi
//! resizes it to fit 2000x2000 pixels and 4.5 MB of base64.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine as _;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::fs::{FileSystem, LocalFs, node_error};
use super::path::resolve_read_path;
use super::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size, truncate_head};
use super::{Spec, abortable, fail};
use crate::agent::{AgentTool, AgentToolResult, ToolError, ToolUpdates};
use crate::llm::message::Content;

/// pi's limits for an image sent inline: 2000 pixels a side, 4.5 MB of base64 (headroom below
/// Anthropic's 5 MB), JPEG quality 80 first.
const MAX_IMAGE_SIDE: u32 = 2000;
const MAX_IMAGE_BASE64: usize = 4_718_592; // 4.5 * 1024 * 1024
const JPEG_QUALITIES: [u8; 5] = [80, 85, 70, 55, 40];

/// The `read` tool.
///
/// ```
/// use pi_engine::agent::{AgentTool, ToolUpdates};
/// use pi_engine::tools::ReadTool;
/// use pi_engine::CancellationToken;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
/// let read = ReadTool::new(dir.path());
/// let args = json!({"path": "a.txt", "offset": 2, "limit": 1});
/// let result = read
///     .execute("call_1", args.as_object().unwrap().clone(), CancellationToken::new(),
///              ToolUpdates::disconnected())
///     .await
///     .unwrap();
/// assert_eq!(result.text_content(), "two\n\n[2 more lines in file. Use offset=3 to continue.]");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ReadTool {
    cwd: PathBuf,
    fs: Arc<dyn FileSystem>,
    auto_resize_images: bool,
    model_accepts_images: bool,
    spec: Arc<Spec>,
}

impl ReadTool {
    /// `read` for files relative to `cwd`, on the local disk.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        ReadTool {
            cwd: cwd.into(),
            fs: Arc::new(LocalFs::new()),
            auto_resize_images: true,
            model_accepts_images: true,
            spec: Arc::new(spec()),
        }
    }

    /// Reads through `fs` instead of the local disk.
    #[must_use]
    pub fn with_fs(mut self, fs: Arc<dyn FileSystem>) -> Self {
        self.fs = fs;
        self
    }

    /// Whether an image larger than pi's limits is scaled down (on by default, as in pi).
    /// Off, the file's bytes are sent as they are.
    #[must_use]
    pub fn with_auto_resize_images(mut self, on: bool) -> Self {
        self.auto_resize_images = on;
        self
    }

    /// Tells the tool the model cannot see images: an image read then carries pi's note
    /// that it will be left out of the request.
    #[must_use]
    pub fn with_model_accepts_images(mut self, accepts: bool) -> Self {
        self.model_accepts_images = accepts;
        self
    }

    async fn run(&self, args: &Map<String, Value>) -> Result<AgentToolResult, ToolError> {
        let raw = args.get("path").and_then(Value::as_str).unwrap_or("");
        let path = resolve_read_path(raw, &self.cwd, self.fs.as_ref()).await;
        let meta = self.fs.metadata(&path).await;
        let meta = meta.map_err(|e| fail(node_error(&e, "access", &path)))?;
        super::check_size(meta.len, raw)?;
        let bytes = self
            .fs
            .read(&path)
            .await
            .map_err(|e| fail(read_error(&e)))?;
        if let Some(mime) = image_mime(&bytes) {
            return Ok(self.image(bytes, mime).await);
        }
        let offset = number(args, "offset");
        let limit = number(args, "limit");
        text_result(&String::from_utf8_lossy(&bytes), raw, offset, limit)
    }

    async fn image(&self, bytes: Vec<u8>, mime: &'static str) -> AgentToolResult {
        let note = (!self.model_accepts_images).then_some(
            "[Current model does not support images. The image will be omitted from this request.]",
        );
        let with_note = |mut text: String| {
            if let Some(note) = note {
                text.push('\n');
                text.push_str(note);
            }
            text
        };
        let fitted = if self.auto_resize_images {
            tokio::task::spawn_blocking(move || fit_image(&bytes, mime))
                .await
                .ok()
                .flatten()
        } else {
            Some(Fitted {
                data: base64::engine::general_purpose::STANDARD.encode(&bytes),
                mime: mime.to_owned(),
                resized: None,
            })
        };
        let content = match fitted {
            None => vec![Content::text(with_note(format!(
                "Read image file [{mime}]\n[Image omitted: could not be resized below the inline image size limit.]"
            )))],
            Some(f) => {
                let mut text = format!("Read image file [{}]", f.mime);
                if let Some(r) = f.resized {
                    text.push('\n');
                    text.push_str(&r.note());
                }
                vec![
                    Content::text(with_note(text)),
                    Content::image(f.data, f.mime),
                ]
            }
        };
        AgentToolResult::new(content).with_details(Value::Null)
    }
}

fn spec() -> Spec {
    Spec::new(
        "read",
        format!(
            "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images are sent as attachments. For text files, output is truncated to {DEFAULT_MAX_LINES} lines or {}KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.",
            DEFAULT_MAX_BYTES / 1024
        ),
        json!({
            "type": "object",
            "required": ["path"],
            "properties": {
                "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
                "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
                "limit": {"type": "number", "description": "Maximum number of lines to read"}
            }
        }),
        "Read file contents",
        &["Use read to examine files instead of cat or sed."],
    )
}

/// A numeric argument as a whole number (a fraction is cut, as JavaScript's slicing does).
pub(crate) fn number(args: &Map<String, Value>, key: &str) -> Option<f64> {
    args.get(key).and_then(Value::as_f64)
}

/// Node reports a failed read without the path: `EISDIR: illegal operation on a directory, read`.
fn read_error(e: &std::io::Error) -> String {
    let text = node_error(e, "read", Path::new(""));
    text.strip_suffix(" ''").unwrap_or(&text).to_owned()
}

fn text_result(
    text: &str,
    raw_path: &str,
    offset: Option<f64>,
    limit: Option<f64>,
) -> Result<AgentToolResult, ToolError> {
    let lines: Vec<&str> = text.split('\n').collect();
    let total = lines.len();
    // 1-indexed; 0, a negative number or no offset all start at the top, as in pi.
    let start = match offset {
        Some(o) if o >= 1.0 => o as usize - 1,
        _ => 0,
    };
    if start >= total {
        let shown = offset.map_or_else(|| "undefined".to_owned(), js_number);
        return Err(fail(format!(
            "Offset {shown} is beyond end of file ({total} lines total)"
        )));
    }
    let (selected, user_limited) = match limit {
        Some(l) => {
            let end = (start + l.max(0.0) as usize).min(total);
            (lines[start..end].join("\n"), Some(end - start))
        }
        None => (lines[start..].join("\n"), None),
    };
    let t = truncate_head(&selected, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
    let first = start + 1;
    let mut details = Value::Null;
    let out = if t.first_line_exceeds_limit {
        let size = format_size(lines[start].len());
        let limit = format_size(DEFAULT_MAX_BYTES);
        details = json!({ "truncation": t });
        format!(
            "[Line {first} is {size}, exceeds {limit} limit. Use bash: sed -n '{first}p' {raw_path} | head -c {DEFAULT_MAX_BYTES}]"
        )
    } else if t.truncated {
        let last = first + t.output_lines - 1;
        let next = last + 1;
        let by_bytes = t.truncated_by == Some(super::TruncatedBy::Bytes);
        let mut out = t.content.clone();
        if by_bytes {
            out.push_str(&format!(
                "\n\n[Showing lines {first}-{last} of {total} ({} limit). Use offset={next} to continue.]",
                format_size(DEFAULT_MAX_BYTES)
            ));
        } else {
            out.push_str(&format!(
                "\n\n[Showing lines {first}-{last} of {total}. Use offset={next} to continue.]"
            ));
        }
        details = json!({ "truncation": t });
        out
    } else if let Some(n) = user_limited.filter(|n| start + n < total) {
        let remaining = total - (start + n);
        format!(
            "{}\n\n[{remaining} more lines in file. Use offset={} to continue.]",
            t.content,
            start + n + 1
        )
    } else {
        t.content
    };
    Ok(AgentToolResult::text(out).with_details(details))
}

/// A number as JavaScript prints it in a template string (`10`, `2.5`).
fn js_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

/// The image types pi sends as images, by their magic bytes.
pub(crate) fn image_mime(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// An image as it is sent: base64 data, its type, and how it was scaled.
pub(crate) struct Fitted {
    pub(crate) data: String,
    pub(crate) mime: String,
    pub(crate) resized: Option<Resized>,
}

/// How an image was scaled to fit.
pub(crate) struct Resized {
    original: (u32, u32),
    shown: (u32, u32),
}

impl Resized {
    /// pi's note on the scaling, for the model.
    pub(crate) fn note(&self) -> String {
        let scale = f64::from(self.original.0) / f64::from(self.shown.0);
        format!(
            "[Image: original {}x{}, displayed at {}x{}. Multiply coordinates by {scale:.2} to map to original image.]",
            self.original.0, self.original.1, self.shown.0, self.shown.1
        )
    }
}

fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

/// pi's strategy: an image within the limits goes as it is; a larger one is scaled (Lanczos3)
/// to fit 2000x2000, then PNG and JPEG at falling qualities are tried and the first under the
/// byte cap wins; failing all, the sides shrink by a quarter and it tries again. `None`: the
/// image could not be decoded or made small enough.
pub(crate) fn fit_image(bytes: &[u8], mime: &str) -> Option<Fitted> {
    let reader = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .ok()?;
    let (w, h) = reader.into_dimensions().ok()?;
    if w <= MAX_IMAGE_SIDE && h <= MAX_IMAGE_SIDE && base64_len(bytes.len()) < MAX_IMAGE_BASE64 {
        return Some(Fitted {
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            mime: mime.to_owned(),
            resized: None,
        });
    }
    let img = image::load_from_memory(bytes).ok()?;
    let (mut tw, mut th) = (w, h);
    if tw > MAX_IMAGE_SIDE {
        th = ((f64::from(th) * f64::from(MAX_IMAGE_SIDE)) / f64::from(tw)).round() as u32;
        tw = MAX_IMAGE_SIDE;
    }
    if th > MAX_IMAGE_SIDE {
        tw = ((f64::from(tw) * f64::from(MAX_IMAGE_SIDE)) / f64::from(th)).round() as u32;
        th = MAX_IMAGE_SIDE;
    }
    let (mut cw, mut ch) = (tw.max(1), th.max(1));
    loop {
        let scaled = img.resize_exact(cw, ch, image::imageops::FilterType::Lanczos3);
        let mut candidates = Vec::with_capacity(1 + JPEG_QUALITIES.len());
        let mut png = Vec::new();
        if scaled
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .is_ok()
        {
            candidates.push((png, "image/png"));
        }
        let rgb = scaled.to_rgb8();
        for q in JPEG_QUALITIES {
            let mut jpeg = Vec::new();
            let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, q);
            if rgb.write_with_encoder(enc).is_ok() {
                candidates.push((jpeg, "image/jpeg"));
            }
        }
        if let Some((data, mime)) = candidates
            .into_iter()
            .find(|(d, _)| base64_len(d.len()) < MAX_IMAGE_BASE64)
        {
            return Some(Fitted {
                data: base64::engine::general_purpose::STANDARD.encode(data),
                mime: mime.to_owned(),
                resized: Some(Resized {
                    original: (w, h),
                    shown: (cw, ch),
                }),
            });
        }
        if cw == 1 && ch == 1 {
            return None;
        }
        let nw = if cw == 1 {
            1
        } else {
            ((cw as f64 * 0.75) as u32).max(1)
        };
        let nh = if ch == 1 {
            1
        } else {
            ((ch as f64 * 0.75) as u32).max(1)
        };
        if (nw, nh) == (cw, ch) {
            return None;
        }
        (cw, ch) = (nw, nh);
    }
}

#[async_trait]
impl AgentTool for ReadTool {
    spec_accessors!();

    /// Reads the file. Cancelled (the run aborted), it stops where it waits and fails with
    /// "Operation aborted".
    async fn execute(
        &self,
        _tool_call_id: &str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<AgentToolResult, ToolError> {
        abortable(&cancel, self.run(&args)).await?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tools::search::tests::call;

    #[tokio::test]
    async fn offset_past_the_end_and_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let tool = ReadTool::new(dir.path());
        let err = call(&tool, json!({"path": "a.txt", "offset": 10}))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Offset 10 is beyond end of file (3 lines total)"
        );
        let err = call(&tool, json!({"path": "nope"})).await.unwrap_err();
        assert!(
            err.to_string()
                .starts_with("ENOENT: no such file or directory, access '")
        );
        let err = call(&tool, json!({"path": "."})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "EISDIR: illegal operation on a directory, read"
        );
    }

    #[tokio::test]
    async fn a_file_over_the_cap_is_refused_not_loaded() {
        let dir = tempfile::tempdir().unwrap();
        // Sparse: no disk space, no memory.
        let f = std::fs::File::create(dir.path().join("huge.log")).unwrap();
        f.set_len(super::super::MAX_FILE_BYTES + 1).unwrap();
        let err = call(&ReadTool::new(dir.path()), json!({"path": "huge.log"}))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "huge.log is 512.0MB, more than the 512.0MB this tool loads. Use bash to look at part of it (head, tail, sed -n 'A,Bp')."
        );
        let args = json!({"path": "huge.log", "edits": [{"oldText": "a", "newText": "b"}]});
        let err = crate::tools::EditTool::new(dir.path())
            .execute(
                "c",
                args.as_object().unwrap().clone(),
                CancellationToken::new(),
                ToolUpdates::disconnected(),
            )
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("huge.log is 512.0MB, more than"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn long_first_line_points_at_bash() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("w.txt"), "x".repeat(60 * 1024)).unwrap();
        let r = call(&ReadTool::new(dir.path()), json!({"path": "w.txt"}))
            .await
            .unwrap();
        assert_eq!(
            r.text_content(),
            "[Line 1 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' w.txt | head -c 51200]"
        );
        assert_eq!(r.details["truncation"]["firstLineExceedsLimit"], true);
    }

    fn png(w: u32, h: u32) -> Vec<u8> {
        let img = image::RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, 7])
        });
        let mut out = Vec::new();
        image::DynamicImage::ImageRgb8(img)
            .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        out
    }

    #[tokio::test]
    async fn a_large_image_is_scaled_to_fit_with_pis_note() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big.png"), png(3000, 1500)).unwrap();
        let tool = ReadTool::new(dir.path()).with_model_accepts_images(false);
        let r = call(&tool, json!({"path": "big.png"})).await.unwrap();
        let text = r.text_content();
        assert!(text.contains("[Image: original 3000x1500, displayed at 2000x1000. Multiply coordinates by 1.50 to map to original image.]"), "{text}");
        assert!(text.ends_with(
            "[Current model does not support images. The image will be omitted from this request.]"
        ));
        let Content::Image(img) = &r.content[1] else {
            panic!("no image")
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&img.data)
            .unwrap();
        let decoded = image::load_from_memory(&bytes).unwrap();
        assert_eq!((decoded.width(), decoded.height()), (2000, 1000));
    }

    #[tokio::test]
    async fn a_small_image_goes_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = png(4, 4);
        std::fs::write(dir.path().join("s.png"), &bytes).unwrap();
        let r = call(&ReadTool::new(dir.path()), json!({"path": "s.png"}))
            .await
            .unwrap();
        assert_eq!(r.text_content(), "Read image file [image/png]");
        let Content::Image(img) = &r.content[1] else {
            panic!("no image")
        };
        assert_eq!(
            img.data,
            base64::engine::general_purpose::STANDARD.encode(&bytes)
        );
    }

    #[tokio::test]
    async fn an_undecodable_image_is_omitted_with_pis_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bad.png"), b"\x89PNG\r\n\x1a\ngarbage").unwrap();
        let r = call(&ReadTool::new(dir.path()), json!({"path": "bad.png"}))
            .await
            .unwrap();
        assert_eq!(
            r.text_content(),
            "Read image file [image/png]\n[Image omitted: could not be resized below the inline image size limit.]"
        );
    }

    #[tokio::test]
    async fn confined_read_refuses_a_symlink_out() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.path().join("s")).unwrap();
        let fs = Arc::new(LocalFs::confined(root.path()).unwrap());
        let tool = ReadTool::new(root.path()).with_fs(fs);
        let err = call(&tool, json!({"path": "s"})).await.unwrap_err();
        assert!(
            err.to_string().contains("outside the allowed root"),
            "{err}"
        );
        let err = call(&tool, json!({"path": "../x"})).await.unwrap_err();
        assert!(
            err.to_string().contains("outside the allowed root"),
            "{err}"
        );
    }
}
