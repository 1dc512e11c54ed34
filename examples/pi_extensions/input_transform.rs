//! input-transform: the `input` event. `?quick <question>` becomes "Respond briefly in 1-2
//! sentences: <question>"; `ping` and `time` are answered in the UI without the model;
//! messages sent by extensions pass untouched. Port of pi's
//! `examples/extensions/input-transform.ts`.

use std::time::{SystemTime, UNIX_EPOCH};

use pi_engine::extensions::{Extension, InputAction, InputSource, NotifyKind};

/// The extension, registered as `input-transform`.
pub(crate) fn extension() -> Extension {
    Extension::new("input-transform", |pi| {
        pi.on_input(|event, ctx| async move {
            if event.source == InputSource::Extension {
                return Ok(Some(InputAction::Continue));
            }
            if let Some(rest) = event.text.strip_prefix("?quick ") {
                let query = rest.trim();
                if query.is_empty() {
                    ctx.ui()
                        .notify("Usage: ?quick <question>", NotifyKind::Warning);
                    return Ok(Some(InputAction::Handled));
                }
                return Ok(Some(InputAction::transform(format!(
                    "Respond briefly in 1-2 sentences: {query}"
                ))));
            }
            match event.text.to_lowercase().as_str() {
                "ping" => {
                    ctx.ui().notify("pong", NotifyKind::Info);
                    Ok(Some(InputAction::Handled))
                }
                "time" => {
                    ctx.ui().notify(&now_text(), NotifyKind::Info);
                    Ok(Some(InputAction::Handled))
                }
                _ => Ok(Some(InputAction::Continue)),
            }
        });
    })
}

/// The time as `Date.toLocaleString()` shows it in the `en-US` locale
/// (`5/6/2026, 3:04:05 PM`), in UTC: the crate has no time-zone data.
fn now_text() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (hour, minute, second) = (rest / 3600, rest / 60 % 60, rest % 60);
    let (year, month, day) = civil_from_days(days as i64);
    let (h12, half) = match hour {
        0 => (12, "AM"),
        1..=11 => (hour, "AM"),
        12 => (12, "PM"),
        _ => (hour - 12, "PM"),
    };
    format!("{month}/{day}/{year}, {h12}:{minute:02}:{second:02} {half}")
}

/// Year, month, day of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::civil_from_days;

    #[test]
    fn days_to_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }
}
