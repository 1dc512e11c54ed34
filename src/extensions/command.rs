//! What a command offers a front end besides its handler: argument completions.

/// One suggestion for a command's arguments (pi's `AutocompleteItem`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Completion {
    /// The text inserted.
    pub value: String,
    /// What is shown (default: the value).
    pub label: String,
    /// A short explanation.
    pub description: Option<String>,
}

impl Completion {
    /// A suggestion shown as its value.
    pub fn new(value: impl Into<String>) -> Self {
        let value = value.into();
        Completion {
            label: value.clone(),
            value,
            description: None,
        }
    }

    /// Shows `label` instead of the value.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Adds a short explanation.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// A command as a front end lists it (pi's `SlashCommandInfo` of an extension command).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandInfo {
    /// The name, without the `/`.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// The extension that registered it.
    pub extension: String,
    /// Whether it offers argument completions.
    pub has_completions: bool,
}

/// A keyboard shortcut as a front end lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShortcutInfo {
    /// The key id (`ctrl+shift+p`).
    pub key: String,
    /// What it does.
    pub description: Option<String>,
    /// The extension that registered it.
    pub extension: String,
}
