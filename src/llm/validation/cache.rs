//! Compiled validators, kept by schema content.
//!
//! pi keeps a compiled validator per schema object in a `WeakMap`, so it lives as long as
//! the tool. Rust tools hold their schema as a plain [`Value`] that callers may clone or
//! rebuild, so here the key is the schema's content: equal schemas share one validator,
//! and a changed schema gets a new one. The cache holds at most [`CAPACITY`] schemas and
//! forgets the least recently used, so a program that makes schemas on the fly cannot grow
//! it without bound. A lookup hashes the schema (a walk over it), which is far cheaper than
//! compiling it.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex};

use jsonschema::{Draft, Validator};
use serde_json::Value;

/// Most schemas kept (tool schemas and their `anyOf`/`oneOf` branches).
pub(crate) const CAPACITY: usize = 256;

/// A compiled schema, or why it does not compile.
pub(crate) type Compiled = Result<Arc<Validator>, Arc<str>>;

struct Entry {
    schema: Value,
    compiled: Compiled,
    last_used: u64,
}

#[derive(Default)]
struct Cache {
    entries: HashMap<u64, Entry>,
    clock: u64,
}

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(Mutex::default);

fn cache() -> std::sync::MutexGuard<'static, Cache> {
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The validator of `schema`, compiled on first use.
pub(crate) fn validator(schema: &Value) -> Compiled {
    let key = hash(schema);
    {
        let mut cache = cache();
        cache.clock += 1;
        let now = cache.clock;
        if let Some(entry) = cache.entries.get_mut(&key)
            && entry.schema == *schema
        {
            entry.last_used = now;
            return entry.compiled.clone();
        }
    }
    // Compiled outside the lock: other threads' lookups do not wait for it.
    let compiled = compile(schema);
    let mut cache = cache();
    if cache.entries.len() >= CAPACITY && !cache.entries.contains_key(&key) {
        let oldest = cache
            .entries
            .iter()
            .min_by_key(|(_, e)| e.last_used)
            .map(|(k, _)| *k);
        if let Some(oldest) = oldest {
            cache.entries.remove(&oldest);
        }
    }
    let last_used = cache.clock;
    cache.entries.insert(
        key,
        Entry {
            schema: schema.clone(),
            compiled: compiled.clone(),
            last_used,
        },
    );
    compiled
}

/// How many schemas the cache holds (for tests).
#[cfg(test)]
pub(crate) fn len() -> usize {
    cache().entries.len()
}

/// Compiles with the draft the schema names (2020-12 when it names none). A schema without
/// `$schema` that is not valid 2020-12 is tried as draft 7 and draft 4, the dialects tool
/// schemas are often written in (tuple `items`, boolean `exclusiveMinimum`).
fn compile(schema: &Value) -> Compiled {
    let build = |draft: Option<Draft>| {
        let mut options = jsonschema::options().should_validate_formats(true);
        if let Some(draft) = draft {
            options = options.with_draft(draft);
        }
        options.build(schema)
    };
    let first = match build(None) {
        Ok(v) => return Ok(Arc::new(v)),
        Err(e) => e,
    };
    if schema.get("$schema").is_none() {
        for draft in [Draft::Draft7, Draft::Draft4] {
            if let Ok(v) = build(Some(draft)) {
                return Ok(Arc::new(v));
            }
        }
    }
    Err(first.to_string().into())
}

fn hash(schema: &Value) -> u64 {
    let mut h = DefaultHasher::new();
    hash_value(schema, &mut h);
    h.finish()
}

fn hash_value(v: &Value, h: &mut DefaultHasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n.to_string()).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            for item in items {
                hash_value(item, h);
            }
        }
        Value::Object(map) => {
            (5u8, map.len()).hash(h);
            for (k, item) in map {
                k.hash(h);
                hash_value(item, h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_schemas_share_a_validator_and_the_cache_is_bounded() {
        let a = validator(&json!({"type": "object", "title": "shared"})).unwrap();
        let b = validator(&json!({"type": "object", "title": "shared"})).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        for i in 0..CAPACITY + 10 {
            validator(&json!({"type": "object", "title": format!("schema {i}")})).unwrap();
        }
        assert!(len() <= CAPACITY);
    }

    #[test]
    fn draft7_tuples_and_bad_schemas() {
        let tuple =
            json!({"type": "array", "items": [{"type": "string"}], "additionalItems": false});
        let v = validator(&tuple).unwrap();
        assert!(v.is_valid(&json!(["a"])));
        assert!(!v.is_valid(&json!(["a", 1])));
        assert!(validator(&json!({"type": 5})).is_err());
    }
}
