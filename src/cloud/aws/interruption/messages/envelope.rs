//! EventBridge's event as it arrives on the queue: the fields every kind has, its `detail` read by the
//! kind's own parser, its times (RFC 3339; AWS Health writes RFC 2822 in its detail) and EC2's instance ids.

use super::notice::Unreadable;
use crate::model::LeavingReason;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::time::SystemTime;

/// The envelope of an EventBridge event.
#[derive(Debug, Deserialize)]
pub struct Envelope {
    /// The envelope's version: "0" is the only one EventBridge writes, and the parsers read its shape.
    pub version: String,
    #[serde(rename = "detail-type")]
    pub detail_type: String,
    pub source: String,
    pub time: String,
    #[serde(default)]
    pub resources: Vec<String>,
    pub detail: serde_json::Value,
}

impl Envelope {
    /// The event's `time`.
    pub fn time(&self, kind: LeavingReason) -> Result<SystemTime, Unreadable> {
        let problem = || format!("{:?} is not an RFC 3339 time", self.time);
        rfc3339(&self.time).ok_or_else(|| Unreadable::field(kind, "time", problem()))
    }

    /// The event's `detail`, as the kind's parser types it.
    pub fn detail<T: DeserializeOwned>(&self, kind: LeavingReason) -> Result<T, Unreadable> {
        T::deserialize(&self.detail).map_err(|e| Unreadable::field(kind, "detail", e))
    }
}

/// An RFC 3339 time (`2021-06-05T18:00:00Z`), as EventBridge writes `time`.
pub fn rfc3339(text: &str) -> Option<SystemTime> {
    let at: jiff::Timestamp = text.parse().ok()?;
    Some(at.into())
}

/// An RFC 2822 time (`Sat, 05 Jun 2021 18:00:00 GMT`) as AWS Health writes it, or an RFC 3339 one. The
/// day of the week, optional in RFC 2822 and redundant, is not read: a wrong one refuses no event.
pub fn rfc2822_or_3339(text: &str) -> Option<SystemTime> {
    let dated = match text.split_once(", ") {
        Some((day, rest)) if day.len() == 3 && day.bytes().all(|b| b.is_ascii_alphabetic()) => rest,
        _ => text,
    };
    match jiff::fmt::rfc2822::DateTimeParser::new().parse_timestamp(dated) {
        Ok(at) => Some(at.into()),
        Err(_) => rfc3339(text),
    }
}

/// Whether `id` is an EC2 instance id: `i-` then 8 (older instances) or 17 lowercase hex digits.
pub fn is_instance_id(id: &str) -> bool {
    id.strip_prefix("i-").is_some_and(|hex| {
        matches!(hex.len(), 8 | 17) && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// An EC2 instance id, or why not.
pub fn instance_id(
    kind: LeavingReason,
    field: &'static str,
    id: &str,
) -> Result<String, Unreadable> {
    if is_instance_id(id) {
        Ok(id.to_string())
    } else {
        let problem = format!("{id:?} is no EC2 instance id (i- and 8 or 17 hex digits)");
        Err(Unreadable::field(kind, field, problem))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_id_is_i_and_8_or_17_hex_digits() {
        for good in ["i-abcd1111", "i-0123456789abcdef0"] {
            assert!(is_instance_id(good), "{good}");
        }
        let bad = [
            "",
            "i-",
            "i-1",
            "i-abcd111",
            "i-abcd11112",
            "i-0123456789abcdef",
            "i-ABCD1111",
            "i-abcd111g",
            "vol-abcd1111",
            "h-0123456789abcdef0",
            "abcd1111",
            "i-0123456789abcdef0 ",
        ];
        for bad in bad {
            assert!(!is_instance_id(bad), "{bad:?}");
        }
        let error = instance_id(LeavingReason::Rebalance, "detail.instance-id", "i-1").unwrap_err();
        assert!(
            error.to_string().contains("\"i-1\" is no EC2 instance id"),
            "{error}"
        );
    }
}
