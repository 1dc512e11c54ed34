//! YAML frontmatter as pi's `parseFrontmatter` reads it: line endings made `\n`, a block
//! between a leading `---` and the next line starting with `---`, parsed as YAML 1.2; the body
//! after it trimmed (left as it is, but for line endings, when there is no frontmatter).

use yaml_rust2::{Yaml, YamlLoader};

use super::text::js_trim;

/// A parsed file: its frontmatter (the document, when there is one) and its body.
#[derive(Debug)]
pub(crate) struct Frontmatter {
    doc: Option<Yaml>,
    pub(crate) body: String,
}

impl Frontmatter {
    /// The value at `key` when the frontmatter is a mapping with that string key.
    pub(crate) fn get(&self, key: &str) -> Option<&Yaml> {
        match &self.doc {
            Some(Yaml::Hash(h)) => h.get(&Yaml::String(key.to_owned())),
            _ => None,
        }
    }

    /// The value at `key` as JavaScript's truthiness sees it: `None` for what is missing or
    /// falsy (`null`, `false`, `0`, `""`, NaN).
    pub(crate) fn truthy(&self, key: &str) -> Option<&Yaml> {
        self.get(key).filter(|v| is_truthy(v))
    }

    /// The value at `key` if it is a string.
    #[cfg(test)]
    pub(crate) fn str(&self, key: &str) -> Option<&str> {
        match self.get(key) {
            Some(Yaml::String(s)) => Some(s),
            _ => None,
        }
    }
}

/// JavaScript truthiness of a YAML value as the npm `yaml` package would build it.
pub(crate) fn is_truthy(v: &Yaml) -> bool {
    match v {
        Yaml::Null | Yaml::BadValue => false,
        Yaml::Boolean(b) => *b,
        Yaml::Integer(i) => *i != 0,
        Yaml::Real(r) => match r.to_ascii_lowercase().as_str() {
            ".nan" => false,
            r => r.parse::<f64>().ok().is_none_or(|f| f != 0.0),
        },
        Yaml::String(s) => !s.is_empty(),
        Yaml::Array(_) | Yaml::Hash(_) | Yaml::Alias(_) => true,
    }
}

/// A scalar as JavaScript's `String(value)` would print it (for descriptions pi keeps as
/// they are, e.g. a number); structures give `None`.
pub(crate) fn scalar_text(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Real(r) => Some(r.clone()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Splits and parses. `Err` is the YAML error, as pi's parser throws one.
pub(crate) fn parse(content: &str) -> Result<Frontmatter, String> {
    let normalized = content.replace("\r\n", "\n").replace('\r', "\n");
    let Some((yaml, body)) = split(&normalized) else {
        return Ok(Frontmatter {
            doc: None,
            body: normalized,
        });
    };
    let body = js_trim(body).to_owned();
    if yaml.is_empty() {
        return Ok(Frontmatter { doc: None, body });
    }
    let mut docs = YamlLoader::load_from_str(yaml).map_err(|e| e.to_string())?;
    if docs.len() > 1 {
        return Err(
            "Source contains multiple documents; please use YAML.parseAllDocuments()".to_owned(),
        );
    }
    Ok(Frontmatter {
        doc: docs.pop().filter(|d| !matches!(d, Yaml::Null)),
        body,
    })
}

/// `(yaml, rest)`: the text from the 5th character to the first `\n---` found after the
/// leading `---` (empty if they overlap, as `slice(4, end)` is), and what follows that `\n---`.
fn split(normalized: &str) -> Option<(&str, &str)> {
    if !normalized.starts_with("---") {
        return None;
    }
    let end = normalized[3..].find("\n---")? + 3;
    // pi skips one character after `---` (normally the newline).
    let start = normalized[3..]
        .chars()
        .next()
        .map_or(3, |c| 3 + c.len_utf8());
    let yaml = normalized.get(start..end).unwrap_or("");
    Some((yaml, &normalized[end + 4..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_pi() {
        let f = parse("---\r\nname: a\r\ndescription: b\r\n---\r\n\r\nBody\r\n").unwrap();
        assert_eq!(f.str("name"), Some("a"));
        assert_eq!(f.body, "Body");
        // No frontmatter: the body is the whole text, untrimmed.
        assert_eq!(parse("  hi\n").unwrap().body, "  hi\n");
        // Unclosed: no frontmatter either.
        let f = parse("---\nname: a\n").unwrap();
        assert!(f.get("name").is_none());
        assert_eq!(f.body, "---\nname: a\n");
        // Empty block.
        let f = parse("---\n---\nx").unwrap();
        assert!(f.get("name").is_none());
        assert_eq!(f.body, "x");
    }

    #[test]
    fn bad_yaml_is_an_error() {
        assert!(parse("---\na: [\n---\nx").is_err());
        assert!(parse("---\na: 1\na: 2\n---\nx").is_err());
    }

    #[test]
    fn truthiness_is_javascripts() {
        let f = parse("---\na: 0\nb: ''\nc: false\nd: x\ne: 1.5\nf: ~\n---\n").unwrap();
        for k in ["a", "b", "c", "f", "missing"] {
            assert!(f.truthy(k).is_none(), "{k}");
        }
        assert!(f.truthy("d").is_some());
        assert!(f.truthy("e").is_some());
    }
}
