//! Timestamps as pi writes them: ISO 8601 in UTC with milliseconds
//! (`new Date().toISOString()`, e.g. `2026-01-01T00:00:00.000Z`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now, as pi's `new Date().toISOString()`.
pub(crate) fn now_iso() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// `new Date(s).getTime()` for the ISO timestamps pi writes; `None` when unparsable.
pub(crate) fn iso_to_millis(s: &str) -> Option<i64> {
    let t = humantime::parse_rfc3339_weak(s).ok()?;
    Some(system_time_to_millis(t))
}

pub(crate) fn system_time_to_millis(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    }
}

pub(crate) fn millis_to_system_time(ms: i64) -> SystemTime {
    if ms >= 0 {
        UNIX_EPOCH + Duration::from_millis(ms as u64)
    } else {
        UNIX_EPOCH - Duration::from_millis(ms.unsigned_abs())
    }
}

/// The file-name form of a timestamp: `:` and `.` replaced by `-`.
pub(crate) fn file_timestamp(iso: &str) -> String {
    iso.replace([':', '.'], "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trip() {
        let now = now_iso();
        assert_eq!(now.len(), 24, "{now}");
        assert!(now.ends_with('Z'));
        assert_eq!(
            iso_to_millis("2026-01-01T00:00:01.500Z"),
            Some(1_767_225_601_500)
        );
        assert_eq!(iso_to_millis("nonsense"), None);
        assert_eq!(
            file_timestamp("2026-01-01T00:00:01.500Z"),
            "2026-01-01T00-00-01-500Z"
        );
        assert_eq!(system_time_to_millis(millis_to_system_time(-5)), -5);
    }
}
