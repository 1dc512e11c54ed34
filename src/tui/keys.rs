//! Input as components receive it: keys with their modifiers, and pasted text, independent of
//! the terminal library that read them (crossterm's events convert with `From`).

use std::fmt;

/// A key, without modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyCode {
    /// A character (for a letter with Shift, the upper-case letter).
    Char(char),
    /// Enter / Return.
    Enter,
    /// Escape.
    Esc,
    /// Backspace.
    Backspace,
    /// Delete (forward).
    Delete,
    /// Tab (Shift+Tab is `BackTab`).
    Tab,
    /// Shift+Tab.
    BackTab,
    /// Arrow left.
    Left,
    /// Arrow right.
    Right,
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Home.
    Home,
    /// End.
    End,
    /// Page up.
    PageUp,
    /// Page down.
    PageDown,
    /// Insert.
    Insert,
    /// A function key, `F(1)` … `F(24)`.
    F(u8),
}

/// Modifier keys held with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Modifiers {
    /// Shift.
    pub shift: bool,
    /// Control.
    pub ctrl: bool,
    /// Alt (Option, Meta).
    pub alt: bool,
    /// Super (Cmd, Windows).
    pub super_key: bool,
}

impl Modifiers {
    /// No modifier.
    pub const NONE: Modifiers = Modifiers {
        shift: false,
        ctrl: false,
        alt: false,
        super_key: false,
    };
    /// Control alone.
    pub const CTRL: Modifiers = Modifiers {
        ctrl: true,
        ..Modifiers::NONE
    };
    /// Alt alone.
    pub const ALT: Modifiers = Modifiers {
        alt: true,
        ..Modifiers::NONE
    };
    /// Shift alone.
    pub const SHIFT: Modifiers = Modifiers {
        shift: true,
        ..Modifiers::NONE
    };
}

/// A key press.
///
/// ```
/// use pi_engine::tui::{Key, KeyCode, Modifiers};
///
/// let key = Key::parse("ctrl+shift+p").unwrap();
/// assert_eq!(key, Key::new(KeyCode::Char('p'), Modifiers { ctrl: true, shift: true, ..Modifiers::NONE }));
/// assert_eq!(key.to_string(), "ctrl+shift+p");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    /// The key.
    pub code: KeyCode,
    /// The modifiers held.
    pub modifiers: Modifiers,
}

impl Key {
    /// A key with modifiers.
    pub const fn new(code: KeyCode, modifiers: Modifiers) -> Self {
        Key { code, modifiers }
    }

    /// A key without modifiers.
    pub const fn plain(code: KeyCode) -> Self {
        Key::new(code, Modifiers::NONE)
    }

    /// A character without modifiers.
    pub const fn char(c: char) -> Self {
        Key::plain(KeyCode::Char(c))
    }

    /// Control and a character.
    pub const fn ctrl(c: char) -> Self {
        Key::new(KeyCode::Char(c), Modifiers::CTRL)
    }

    /// Alt and a character.
    pub const fn alt(c: char) -> Self {
        Key::new(KeyCode::Char(c), Modifiers::ALT)
    }

    /// True for this character typed alone (or with Shift only, as for a capital).
    pub fn is_char(&self, c: char) -> bool {
        self.code == KeyCode::Char(c)
            && !self.modifiers.ctrl
            && !self.modifiers.alt
            && !self.modifiers.super_key
    }

    /// The text a key types, if it types any (a character without Ctrl, Alt or Super).
    pub fn text(&self) -> Option<char> {
        match self.code {
            KeyCode::Char(c)
                if !self.modifiers.ctrl && !self.modifiers.alt && !self.modifiers.super_key =>
            {
                Some(c)
            }
            _ => None,
        }
    }

    /// Parses pi's key names: modifiers `ctrl`, `alt`, `shift`, `super` joined with `+`
    /// to a key (`a`, `enter`, `escape`/`esc`, `tab`, `backspace`, `delete`, `up`, `home`,
    /// `pageup`, `f5`, `space`, …), case-insensitive.
    pub fn parse(text: &str) -> Option<Key> {
        let mut modifiers = Modifiers::NONE;
        let parts: Vec<&str> = text.split('+').map(str::trim).collect();
        let (last, mods) = parts.split_last()?;
        for m in mods {
            match m.to_ascii_lowercase().as_str() {
                "ctrl" | "control" => modifiers.ctrl = true,
                "alt" | "meta" | "option" => modifiers.alt = true,
                "shift" => modifiers.shift = true,
                "super" | "cmd" => modifiers.super_key = true,
                _ => return None,
            }
        }
        let lower = last.to_ascii_lowercase();
        let code = match lower.as_str() {
            "enter" | "return" => KeyCode::Enter,
            "escape" | "esc" => KeyCode::Esc,
            "tab" if modifiers.shift => {
                modifiers.shift = false;
                KeyCode::BackTab
            }
            "tab" => KeyCode::Tab,
            "backspace" => KeyCode::Backspace,
            "delete" | "del" => KeyCode::Delete,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" => KeyCode::PageUp,
            "pagedown" => KeyCode::PageDown,
            "insert" => KeyCode::Insert,
            "space" => KeyCode::Char(' '),
            f if f.len() > 1 && f.starts_with('f') && f[1..].parse::<u8>().is_ok() => {
                KeyCode::F(f[1..].parse().ok()?)
            }
            _ => {
                let mut chars = last.chars();
                let c = chars.next()?;
                if chars.next().is_some() {
                    return None;
                }
                KeyCode::Char(c.to_ascii_lowercase())
            }
        };
        Some(Key { code, modifiers })
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.modifiers;
        for (on, name) in [
            (m.ctrl, "ctrl+"),
            (m.alt, "alt+"),
            (m.shift, "shift+"),
            (m.super_key, "super+"),
        ] {
            if on {
                f.write_str(name)?;
            }
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Esc => f.write_str("escape"),
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::Delete => f.write_str("delete"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("shift+tab"),
            KeyCode::Left => f.write_str("left"),
            KeyCode::Right => f.write_str("right"),
            KeyCode::Up => f.write_str("up"),
            KeyCode::Down => f.write_str("down"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::PageUp => f.write_str("pageup"),
            KeyCode::PageDown => f.write_str("pagedown"),
            KeyCode::Insert => f.write_str("insert"),
            KeyCode::F(n) => write!(f, "f{n}"),
        }
    }
}

/// What a component is given: a key, or text pasted at once (bracketed paste).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Input {
    /// A key press.
    Key(Key),
    /// Pasted text, whole.
    Paste(String),
}

impl From<Key> for Input {
    fn from(key: Key) -> Self {
        Input::Key(key)
    }
}

impl From<crossterm::event::KeyEvent> for Key {
    fn from(event: crossterm::event::KeyEvent) -> Self {
        use crossterm::event::{KeyCode as C, KeyModifiers as M};
        let m = event.modifiers;
        let mut modifiers = Modifiers {
            shift: m.contains(M::SHIFT),
            ctrl: m.contains(M::CONTROL),
            alt: m.contains(M::ALT) || m.contains(M::META),
            super_key: m.contains(M::SUPER),
        };
        let code = match event.code {
            C::Char(c) => {
                // Ctrl+letter arrives lower-case; Shift+letter upper-case with Shift set.
                KeyCode::Char(if modifiers.ctrl {
                    c.to_ascii_lowercase()
                } else {
                    c
                })
            }
            C::Enter => KeyCode::Enter,
            C::Esc => KeyCode::Esc,
            C::Backspace => KeyCode::Backspace,
            C::Delete => KeyCode::Delete,
            C::Tab => KeyCode::Tab,
            C::BackTab => {
                modifiers.shift = false;
                KeyCode::BackTab
            }
            C::Left => KeyCode::Left,
            C::Right => KeyCode::Right,
            C::Up => KeyCode::Up,
            C::Down => KeyCode::Down,
            C::Home => KeyCode::Home,
            C::End => KeyCode::End,
            C::PageUp => KeyCode::PageUp,
            C::PageDown => KeyCode::PageDown,
            C::Insert => KeyCode::Insert,
            C::F(n) => KeyCode::F(n),
            // Keys a component never acts on (media keys, lone modifiers).
            _ => KeyCode::F(0),
        };
        Key { code, modifiers }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in [
            "ctrl+c",
            "alt+enter",
            "shift+tab",
            "ctrl+shift+p",
            "escape",
            "f5",
            "space",
            "pageup",
        ] {
            let key = Key::parse(name).unwrap();
            assert_eq!(Key::parse(&key.to_string()), Some(key), "{name}");
        }
        assert_eq!(Key::parse("shift+tab"), Some(Key::plain(KeyCode::BackTab)));
        assert_eq!(Key::parse("hyper+x"), None);
    }

    #[test]
    fn from_crossterm() {
        use crossterm::event::{KeyCode as C, KeyEvent, KeyModifiers as M};
        let k: Key = KeyEvent::new(C::Char('P'), M::CONTROL | M::SHIFT).into();
        assert_eq!(k, Key::parse("ctrl+shift+p").unwrap());
        let k: Key = KeyEvent::new(C::BackTab, M::SHIFT).into();
        assert_eq!(k, Key::plain(KeyCode::BackTab));
        let k: Key = KeyEvent::new(C::Char('A'), M::SHIFT).into();
        assert_eq!(k.text(), Some('A'));
    }
}
