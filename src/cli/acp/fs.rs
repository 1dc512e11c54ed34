//! The file system of an ACP session whose client offers its own (`fs.readTextFile`,
//! `fs.writeTextFile`): the tools read and write text files through the editor, so they see
//! unsaved changes and the editor sees theirs. Everything else (directories, metadata,
//! images, bytes that are not UTF-8) is the local disk's.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use agent_client_protocol_schema::v1 as acp;
use async_trait::async_trait;

use super::peer::Peer;
use crate::tools::{DirEntry, FileSystem, LocalFs, LocalSearch, Metadata};

pub(super) struct AcpFs {
    peer: Arc<Peer>,
    session: Arc<OnceLock<acp::SessionId>>,
    read: bool,
    write: bool,
    local: LocalFs,
}

impl std::fmt::Debug for AcpFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpFs")
            .field("read", &self.read)
            .field("write", &self.write)
            .finish()
    }
}

impl AcpFs {
    pub(super) fn new(
        peer: Arc<Peer>,
        session: Arc<OnceLock<acp::SessionId>>,
        capabilities: &acp::FileSystemCapabilities,
    ) -> Self {
        AcpFs {
            peer,
            session,
            read: capabilities.read_text_file,
            write: capabilities.write_text_file,
            local: LocalFs::new(),
        }
    }
}

/// Files the read tool shows as images: always read as bytes from the disk.
fn is_binary(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    matches!(
        ext.as_deref(),
        Some("png" | "jpg" | "jpeg" | "gif" | "webp" | "bmp" | "ico" | "pdf" | "zip" | "gz")
    )
}

#[async_trait]
impl FileSystem for AcpFs {
    async fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        if self.read
            && !is_binary(path)
            && let Some(session) = self.session.get()
        {
            let request = acp::ReadTextFileRequest::new(session.clone(), path.to_owned());
            match self.peer.request("fs/read_text_file", request).await {
                Ok(value) => {
                    if let Ok(response) = serde_json::from_value::<acp::ReadTextFileResponse>(value)
                    {
                        return Ok(response.content.into_bytes());
                    }
                }
                // The disk says why (no such file, a directory, …) in the words the
                // model expects.
                Err(e) => tracing::debug!(error = %e.message, "ACP: fs/read_text_file failed"),
            }
        }
        self.local.read(path).await
    }

    async fn write(&self, path: &Path, contents: &[u8]) -> io::Result<()> {
        if self.write
            && let Some(session) = self.session.get()
            && let Ok(text) = std::str::from_utf8(contents)
        {
            let request =
                acp::WriteTextFileRequest::new(session.clone(), path.to_owned(), text.to_owned());
            return match self.peer.request("fs/write_text_file", request).await {
                Ok(_) => Ok(()),
                Err(e) => Err(io::Error::other(format!(
                    "the editor could not write {}: {}",
                    path.display(),
                    e.message
                ))),
            };
        }
        self.local.write(path, contents).await
    }

    async fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.local.create_dir_all(path).await
    }

    async fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        self.local.metadata(path).await
    }

    async fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        self.local.read_dir(path).await
    }

    async fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.local.canonicalize(path).await
    }

    /// `grep` and `find` search the disk in-process, as with the local file system.
    fn local_search_root(&self) -> Option<LocalSearch> {
        self.local.local_search_root()
    }
}
