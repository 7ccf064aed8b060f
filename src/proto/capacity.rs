//! Capacity reservations as plain values, read from and written to the `ekscale.v1` wire: the provider
//! serving DescribeNodeGroups, and the companion reading it.

use super::generated::ekscale;
use crate::model::{Invalid, Reservation, ReservationType};
use std::time::{Duration, SystemTime};

/// An instant as Unix seconds, 0 for none.
fn seconds(at: Option<SystemTime>) -> i64 {
    at.and_then(|at| at.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Unix seconds as an instant, 0 for none; negative is refused naming `field`.
fn instant(field: &str, seconds: i64) -> Result<Option<SystemTime>, Invalid> {
    match u64::try_from(seconds) {
        Ok(0) => Ok(None),
        Ok(s) => Ok(Some(SystemTime::UNIX_EPOCH + Duration::from_secs(s))),
        Err(_) => Err(Invalid::new(field, "must not be negative")),
    }
}

/// A count as the wire's int32, saturating.
fn count(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl From<&Reservation> for ekscale::CapacityReservation {
    fn from(r: &Reservation) -> Self {
        ekscale::CapacityReservation {
            id: r.id.clone(),
            r#type: r.kind.to_string(),
            start_unix_seconds: seconds(r.start),
            end_unix_seconds: seconds(r.end),
            total: count(r.total),
            available: count(r.available),
        }
    }
}

impl TryFrom<ekscale::CapacityReservation> for Reservation {
    type Error = Invalid;

    /// A type the companion does not know, or a reservation that breaks a rule, is refused naming the field.
    fn try_from(sent: ekscale::CapacityReservation) -> Result<Self, Invalid> {
        let whole = |n: i32, field: &str| {
            u32::try_from(n).map_err(|_| Invalid::new(field, "must not be negative"))
        };
        let reservation = Reservation {
            kind: ReservationType::parse(&sent.r#type)?,
            start: instant("start_unix_seconds", sent.start_unix_seconds)?,
            end: instant("end_unix_seconds", sent.end_unix_seconds)?,
            total: whole(sent.total, "total")?,
            available: whole(sent.available, "available")?,
            id: sent.id,
        };
        reservation.validate()?;
        Ok(reservation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_travels_whole_and_a_broken_one_is_refused() {
        let block = Reservation {
            id: "cr-0a1b2c3d".into(),
            kind: ReservationType::CapacityBlock,
            start: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)),
            end: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_086_400)),
            total: 4,
            available: 1,
        };
        let sent = ekscale::CapacityReservation::from(&block);
        assert_eq!(Reservation::try_from(sent.clone()).unwrap(), block);
        let open = Reservation {
            kind: ReservationType::Odcr,
            start: None,
            end: None,
            ..block.clone()
        };
        let sent_open = ekscale::CapacityReservation::from(&open);
        assert_eq!(
            (sent_open.start_unix_seconds, sent_open.end_unix_seconds),
            (0, 0)
        );
        assert_eq!(Reservation::try_from(sent_open).unwrap(), open);
        let field =
            |sent: ekscale::CapacityReservation| Reservation::try_from(sent).unwrap_err().field;
        assert_eq!(
            field(ekscale::CapacityReservation {
                r#type: "default".into(),
                ..sent.clone()
            }),
            "type"
        );
        assert_eq!(
            field(ekscale::CapacityReservation {
                total: -1,
                ..sent.clone()
            }),
            "total"
        );
        assert_eq!(
            field(ekscale::CapacityReservation {
                available: 5,
                ..sent.clone()
            }),
            "available"
        );
        assert_eq!(
            field(ekscale::CapacityReservation {
                end_unix_seconds: 0,
                ..sent
            }),
            "end"
        );
    }
}
