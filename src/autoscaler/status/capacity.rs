//! A group's capacity paid for or held ahead, as the report names it: the EC2 capacity reservations its launch
//! template targets, and the scheduled sizes in force.

use crate::model::Reservation;
use serde::Serialize;
use std::time::SystemTime;

/// An instant as RFC 3339 in UTC, to the second.
fn rfc3339(at: SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string()
}

/// One reservation of `nodeGroups[].reservations`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReservationStatus {
    pub id: String,
    /// `capacity-block` or `odcr`.
    #[serde(rename = "type")]
    pub kind: String,
    /// RFC 3339; null for an ODCR active since it was made, and for an open-ended one's end.
    pub start: Option<String>,
    pub end: Option<String>,
    pub total: u32,
    pub available: u32,
}

impl From<&Reservation> for ReservationStatus {
    fn from(r: &Reservation) -> Self {
        ReservationStatus {
            id: r.id.clone(),
            kind: r.kind.to_string(),
            start: r.start.map(rfc3339),
            end: r.end.map(rfc3339),
            total: r.total,
            available: r.available,
        }
    }
}

/// `nodeGroups[].schedule`: the sizes a scheduled window holds the group to, and when the window closes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleStatus {
    pub min_size: i32,
    pub max_size: i32,
    /// RFC 3339.
    pub until: String,
    /// Which window, as written: `schedules[0]: "0 19 * * mon-fri" for 13h in Europe/Berlin`.
    pub window: String,
    /// When the window asks for sizes beyond the provider's own min and max, which it is held to instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ScheduleStatus {
    pub fn new(min_size: i32, max_size: i32, until: SystemTime, window: String) -> ScheduleStatus {
        ScheduleStatus {
            min_size,
            max_size,
            until: rfc3339(until),
            window,
            note: None,
        }
    }
}
