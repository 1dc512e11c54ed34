//! JSON helpers for streamed tool-call arguments.
//!
//! [`PartialJsonParser`] turns the argument fragments a model streams into a JSON object that
//! always holds what has arrived so far (what pi's `parseStreamingJson` shows), in time linear
//! in the length of the stream; [`parse_streaming_json`] does the same for a whole buffer at
//! once.

pub(crate) mod js;
mod partial;

pub use partial::{PartialJsonParser, parse_streaming_json};

/// Serializes an `f64` as JavaScript's `JSON.stringify` would: integral values without a
/// fractional part (`0`, not `0.0`), so costs and prices read back by pi are unchanged.
pub(crate) fn js_f64<S: serde::Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if value.is_finite() && value.fract() == 0.0 && value.abs() <= MAX_SAFE {
        s.serialize_i64(*value as i64)
    } else {
        s.serialize_f64(*value)
    }
}
