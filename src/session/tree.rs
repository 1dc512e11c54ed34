//! [`SessionTree`]: the whole entry tree, for navigation UIs (pi's `getTree()`).
//!
//! The tree is flat — nodes in a vector, children as indices — so a session of a hundred
//! thousand entries in one chain is no deeper on the stack than a short one, and building
//! it parses no entry bodies: use [`SessionManager::entry`](super::SessionManager::entry)
//! for a node's content.

use super::entry::EntryType;
use super::index::{Index, Parent};

/// One node of a [`SessionTree`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TreeNode {
    /// The entry id.
    pub id: String,
    /// The entry type.
    pub entry_type: EntryType,
    /// The entry's timestamp (ISO 8601).
    pub timestamp: String,
    /// The entry's label, if any.
    pub label: Option<String>,
    /// When the label was set.
    pub label_timestamp: Option<String>,
    children: Vec<usize>,
}

/// The session's entries as a tree: roots in file order (an orphan — an entry whose parent
/// does not exist — is a root, as in pi), children oldest first.
///
/// ```
/// use pi_engine::session::SessionManager;
/// use pi_engine::UserMessage;
///
/// let mut sm = SessionManager::in_memory("/tmp/project");
/// let first = sm.append_message(UserMessage::text("hi")).unwrap();
/// sm.append_message(UserMessage::text("a")).unwrap();
/// sm.branch(&first).unwrap();
/// sm.append_message(UserMessage::text("b")).unwrap();
///
/// let tree = sm.tree();
/// let root = tree.roots().next().unwrap();
/// assert_eq!(root.id, first);
/// assert_eq!(tree.children(root).count(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionTree {
    nodes: Vec<TreeNode>,
    roots: Vec<usize>,
}

impl SessionTree {
    pub(crate) fn build(index: &Index) -> SessionTree {
        let mut nodes: Vec<TreeNode> = index
            .nodes
            .iter()
            .map(|n| {
                let label = index.labels.get(&*n.id);
                TreeNode {
                    id: n.id.to_string(),
                    entry_type: n.entry_type,
                    timestamp: n.timestamp.to_string(),
                    label: label.map(|l| l.label.clone()),
                    label_timestamp: label.map(|l| l.timestamp.clone()),
                    children: Vec::new(),
                }
            })
            .collect();
        let mut roots = Vec::new();
        for (i, n) in index.nodes.iter().enumerate() {
            match n.parent {
                Parent::Node(p) => nodes[p as usize].children.push(i),
                Parent::Root | Parent::Missing(_) => roots.push(i),
            }
        }
        for node in &mut nodes {
            // Stable: equal (or unparsable, which sort first) timestamps keep file order.
            node.children
                .sort_by_key(|&c| index.nodes[c].ts_ms.unwrap_or(i64::MIN));
        }
        SessionTree { nodes, roots }
    }

    /// The roots, in file order.
    pub fn roots(&self) -> impl ExactSizeIterator<Item = &TreeNode> + '_ {
        self.roots.iter().map(|&i| &self.nodes[i])
    }

    /// The children of `node`, oldest first.
    pub fn children<'a>(
        &'a self,
        node: &'a TreeNode,
    ) -> impl ExactSizeIterator<Item = &'a TreeNode> + 'a {
        node.children.iter().map(|&i| &self.nodes[i])
    }

    /// Every node, in file order.
    pub fn nodes(&self) -> &[TreeNode] {
        &self.nodes
    }

    /// The node of entry `id`.
    pub fn get(&self, id: &str) -> Option<&TreeNode> {
        self.nodes.iter().rev().find(|n| n.id == id)
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True for an empty session.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}
