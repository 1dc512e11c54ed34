//! Token counts as providers send them, read leniently by every decoder.
//!
//! A usage count is informational: a proxy that reports `-5`, `1.5`, `1e30` or a string must
//! not turn a complete reply into an error. [`count`] reads any JSON value: a non-negative
//! integer as itself, a negative number as 0, a fraction cut to its whole part, a number
//! beyond `u64::MAX` as `u64::MAX`, and `null` or a value of another type as absent.
//! Sums of counts saturate ([`crate::Usage`]), so `u64::MAX` never overflows.

use std::fmt;

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// A `deserialize_with` function for an `Option<u64>` token count (use with
/// `#[serde(default)]`): see the module documentation.
///
/// The value is read as raw JSON text (the decoders all read serde_json text), so even a
/// number beyond `f64`'s range (`1e400`), which serde_json refuses to parse, saturates
/// instead of failing the event.
pub(crate) fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let raw = <&RawValue>::deserialize(d)?;
    Ok(count_text(raw.get()))
}

/// A count from the text of one JSON value.
fn count_text(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.as_bytes().first()? {
        b'-' => Some(0),
        b'0'..=b'9' if text.bytes().all(|b| b.is_ascii_digit()) => {
            Some(text.parse().unwrap_or(u64::MAX))
        }
        // Rust's float parsing has no range error: 1e400 reads as infinity.
        b'0'..=b'9' => text.parse::<f64>().ok().map(from_f64),
        _ => None,
    }
}

/// As [`count`], for an index (a choice's, a tool call's), where a negative number means
/// nothing and reads as absent. (Read as a number: unlike a count, an index out of `f64`'s
/// range fails the event, as a malformed index should.)
pub(crate) fn index<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_any(IndexVisitor)
}

/// A count read from a number already parsed (the fast paths' scanners).
pub(crate) fn from_f64(v: f64) -> u64 {
    if v.is_nan() || v <= 0.0 {
        0
    } else {
        // `as` truncates the fraction and saturates at u64::MAX.
        v as u64
    }
}

/// Reads an index: a number, negative ones absent.
struct IndexVisitor;

impl<'de> Visitor<'de> for IndexVisitor {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(u64::try_from(v).ok())
    }
    fn visit_u128<E>(self, v: u128) -> Result<Self::Value, E> {
        Ok(Some(u64::try_from(v).unwrap_or(u64::MAX)))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Self::Value, E> {
        if v < 0 {
            return Ok(None);
        }
        Ok(Some(u64::try_from(v).unwrap_or(u64::MAX)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        if v < 0.0 {
            return Ok(None);
        }
        Ok(Some(from_f64(v)))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bytes<E>(self, _: &[u8]) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Counts {
        #[serde(default, deserialize_with = "super::count")]
        n: Option<u64>,
    }

    fn read(json: &str) -> Option<u64> {
        serde_json::from_str::<Counts>(json).unwrap().n
    }

    #[test]
    fn every_json_value_reads_without_an_error() {
        assert_eq!(read(r#"{"n": 5}"#), Some(5));
        assert_eq!(read(r#"{"n": 18446744073709551615}"#), Some(u64::MAX));
        assert_eq!(read(r#"{"n": 18446744073709551616}"#), Some(u64::MAX));
        assert_eq!(read(r#"{"n": 1e30}"#), Some(u64::MAX));
        assert_eq!(read(r#"{"n": 1e400}"#), Some(u64::MAX));
        assert_eq!(read(r#"{"n": 1E+400}"#), Some(u64::MAX));
        assert_eq!(
            read(&format!(r#"{{"n": {}}}"#, "9".repeat(400))),
            Some(u64::MAX)
        );
        assert_eq!(read(r#"{"n": -1e400}"#), Some(0));
        assert_eq!(read(r#"{"n": 0}"#), Some(0));
        assert_eq!(read(r#"{"n": -0}"#), Some(0));
        assert_eq!(read(r#"{"n": 2.5e3}"#), Some(2500));
        assert_eq!(read(r#"{"n": -5}"#), Some(0));
        assert_eq!(read(r#"{"n": -9223372036854775809}"#), Some(0));
        assert_eq!(read(r#"{"n": -1e30}"#), Some(0));
        assert_eq!(read(r#"{"n": 7.9}"#), Some(7));
        assert_eq!(read(r#"{"n": null}"#), None);
        assert_eq!(read(r#"{}"#), None);
        assert_eq!(read(r#"{"n": "12"}"#), None);
        assert_eq!(read(r#"{"n": true}"#), None);
        assert_eq!(read(r#"{"n": [1, {"a": 2}]}"#), None);
        assert_eq!(read(r#"{"n": {"a": [1]}}"#), None);
    }

    #[derive(Deserialize)]
    struct Index {
        #[serde(default, deserialize_with = "super::index")]
        i: Option<u64>,
    }

    #[test]
    fn a_negative_index_is_absent() {
        let read = |json: &str| serde_json::from_str::<Index>(json).unwrap().i;
        assert_eq!(read(r#"{"i": 2}"#), Some(2));
        assert_eq!(read(r#"{"i": -1}"#), None);
        assert_eq!(read(r#"{"i": -1.5}"#), None);
        assert_eq!(read(r#"{"i": 1e30}"#), Some(u64::MAX));
        assert_eq!(read(r#"{"i": "x"}"#), None);
    }

    #[test]
    fn from_f64_saturates() {
        assert_eq!(super::from_f64(-0.5), 0);
        assert_eq!(super::from_f64(f64::NAN), 0);
        assert_eq!(super::from_f64(3.99), 3);
        assert_eq!(super::from_f64(f64::INFINITY), u64::MAX);
    }
}
