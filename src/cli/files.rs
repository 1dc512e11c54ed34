//! `@file` arguments and piped stdin, merged into the first message as pi does: stdin, then
//! each file (text as `<file name="…">…</file>`, an image as an attachment with a reference
//! in the text), then the first message.

use std::path::{Path, PathBuf};

use crate::llm::message::ImageContent;

/// What the `@file` arguments add to the first message.
#[derive(Debug, Default)]
pub(crate) struct FileInput {
    pub(crate) text: String,
    pub(crate) images: Vec<ImageContent>,
}

/// A file that could not be used; the text is pi's.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileError {
    #[error("File not found: {}", .0.display())]
    NotFound(PathBuf),
    #[error("Could not read file {}: {reason}", path.display())]
    Unreadable { path: PathBuf, reason: String },
}

/// `~` at the start, relative to `cwd`, as pi resolves a file argument.
fn resolve(arg: &str, cwd: &Path) -> PathBuf {
    let expanded = if arg == "~" {
        std::env::home_dir().unwrap_or_default()
    } else if let Some(rest) = arg.strip_prefix("~/") {
        std::env::home_dir().unwrap_or_default().join(rest)
    } else {
        PathBuf::from(arg)
    };
    cwd.join(expanded)
}

/// Reads the `@file` arguments (blocking: run it off the async threads).
pub(crate) fn read_files(args: &[String], cwd: &Path) -> Result<FileInput, FileError> {
    let mut out = FileInput::default();
    for arg in args {
        let path = resolve(arg, cwd);
        let meta = std::fs::metadata(&path).map_err(|_| FileError::NotFound(path.clone()))?;
        if meta.len() == 0 {
            // pi skips empty files.
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| FileError::Unreadable {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let name = path.display();
        #[cfg(feature = "tools")]
        if let Some(mime) = crate::tools::read_image_mime(&bytes) {
            match crate::tools::fit_read_image(&bytes, mime) {
                None => out.text.push_str(&format!(
                    "<file name=\"{name}\">[Image omitted: could not be resized below the inline image size limit.]</file>\n"
                )),
                Some((image, note)) => {
                    out.images.push(image);
                    out.text.push_str(&format!(
                        "<file name=\"{name}\">{}</file>\n",
                        note.unwrap_or_default()
                    ));
                }
            }
            continue;
        }
        let text = String::from_utf8(bytes).map_err(|e| FileError::Unreadable {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        out.text
            .push_str(&format!("<file name=\"{name}\">\n{text}\n</file>\n"));
    }
    Ok(out)
}

/// The first message: stdin, the files' text, then the first message given (pi's
/// `buildInitialMessage`); `None` when there is none of them.
pub(crate) fn initial_message(
    stdin: Option<String>,
    files: &FileInput,
    first: Option<String>,
) -> Option<String> {
    let mut parts = Vec::new();
    parts.extend(stdin);
    if !files.text.is_empty() {
        parts.push(files.text.clone());
    }
    parts.extend(first);
    (!parts.is_empty()).then(|| parts.concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_files_are_wrapped_and_empty_ones_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "# A").unwrap();
        std::fs::write(dir.path().join("empty.txt"), "").unwrap();
        let got = read_files(&["a.md".into(), "empty.txt".into()], dir.path()).unwrap();
        let name = dir.path().join("a.md");
        assert_eq!(
            got.text,
            format!("<file name=\"{}\">\n# A\n</file>\n", name.display())
        );
        assert!(got.images.is_empty());
        let missing = read_files(&["nope".into()], dir.path()).unwrap_err();
        assert!(missing.to_string().starts_with("File not found: "));
    }

    #[test]
    fn the_first_message_is_stdin_then_files_then_the_message() {
        let files = FileInput {
            text: "<file>x</file>\n".into(),
            images: Vec::new(),
        };
        assert_eq!(
            initial_message(Some("piped".into()), &files, Some("do it".into())).as_deref(),
            Some("piped<file>x</file>\ndo it")
        );
        assert_eq!(initial_message(None, &FileInput::default(), None), None);
    }
}
