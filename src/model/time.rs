//! Times written in files (scenarios, scripts), read one strict way: RFC 3339 with its zone, so that a time
//! names one instant whatever the machine's zone, and a bad one is refused naming its field.

use super::invalid::Invalid;
use std::time::SystemTime;

/// `text` as an RFC 3339 time with its zone (`2026-03-02T09:00:00Z`, `2026-03-02T10:00:00+01:00`), or why it
/// is none, naming `field`.
pub fn rfc3339(field: &str, text: &str) -> Result<SystemTime, Invalid> {
    let stamp: jiff::Timestamp = text.parse().map_err(|e| {
        let rule = format!("{text:?} is no RFC 3339 time with a zone ({e})");
        Invalid::new(field, rule)
    })?;
    Ok(SystemTime::from(stamp))
}

#[cfg(test)]
mod tests {
    use super::rfc3339;
    use std::time::{Duration, SystemTime};

    #[test]
    fn a_time_needs_its_zone() {
        let utc = rfc3339("at", "2026-03-02T09:00:00Z").unwrap();
        assert_eq!(
            utc.duration_since(SystemTime::UNIX_EPOCH).unwrap(),
            Duration::from_secs(1_772_442_000)
        );
        assert_eq!(rfc3339("at", "2026-03-02T10:00:00+01:00").unwrap(), utc);
        for bad in ["2026-03-02T09:00:00", "2026-03-02 09:00:00", "noon", ""] {
            let error = rfc3339("start", bad).unwrap_err();
            assert_eq!(error.field, "start");
            assert!(error.rule.contains("no RFC 3339 time"), "{bad}: {error}");
        }
    }
}
