//! The scenario's keys for capacity paid for ahead: each group's `reservations` (the EC2 capacity reservations
//! its launch template targets), read strictly and checked against its `capacityType` as EKS and EC2 would.

use crate::model::{CapacityType, Invalid, Reservation, ReservationType, rfc3339};
use serde::Deserialize;

/// One of a group's `reservations`: `{id, type: capacity-block|odcr, start, end, total, available}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReservationFile {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    end: Option<String>,
    total: u32,
    /// What is free of it before the group's own instances (left out: all of `total`): the rest is held by
    /// instances outside the group for the whole scenario, and the group's instances, those of `desiredSize`
    /// included, fill what is free (`super::live`).
    #[serde(default)]
    available: Option<u32>,
}

impl ReservationFile {
    fn read(&self) -> Result<Reservation, Invalid> {
        let time = |field: &str, text: &Option<String>| {
            text.as_deref().map(|t| rfc3339(field, t)).transpose()
        };
        let reservation = Reservation {
            id: self.id.clone(),
            kind: ReservationType::parse(&self.kind)?,
            start: time("start", &self.start)?,
            end: time("end", &self.end)?,
            total: self.total,
            available: self.available.unwrap_or(self.total),
        };
        reservation.validate()?;
        Ok(reservation)
    }
}

/// A group's reservations, each checked, and together with its capacity type: a `CAPACITY_BLOCK` group
/// targets capacity blocks and at least one (EKS requires the launch template to name one); an `ON_DEMAND`
/// group may target ODCRs; a `SPOT` group targets none (a reservation is On-Demand capacity).
pub fn read_reservations(
    capacity_type: CapacityType,
    files: &[ReservationFile],
) -> Result<Vec<Reservation>, Invalid> {
    let reservations = (files.iter().enumerate())
        .map(|(i, file)| (file.read()).map_err(|e| e.within(&format!("reservations[{i}]"))))
        .collect::<Result<Vec<_>, _>>()?;
    let mut ids = std::collections::HashSet::new();
    for (i, r) in reservations.iter().enumerate() {
        let field = format!("reservations[{i}]");
        if !ids.insert(r.id.as_str()) {
            return Err(Invalid::new(
                format!("{field}.id"),
                format!("{:?} is listed twice", r.id),
            ));
        }
        let fits = match capacity_type {
            CapacityType::CapacityBlock => r.kind == ReservationType::CapacityBlock,
            CapacityType::OnDemand => r.kind == ReservationType::Odcr,
            CapacityType::Spot => false,
        };
        if !fits {
            let rule = match capacity_type {
                CapacityType::CapacityBlock => {
                    "a CAPACITY_BLOCK group targets capacity blocks only"
                }
                CapacityType::OnDemand => {
                    "an ON_DEMAND group targets ODCRs only: a capacity block needs capacityType CAPACITY_BLOCK"
                }
                CapacityType::Spot => {
                    "a SPOT group targets no reservation: reserved capacity is On-Demand"
                }
            };
            return Err(Invalid::new(format!("{field}.type"), rule));
        }
    }
    if capacity_type == CapacityType::CapacityBlock && reservations.is_empty() {
        return Err(Invalid::new(
            "reservations",
            "a CAPACITY_BLOCK group's launch template targets a capacity block: list it",
        ));
    }
    Ok(reservations)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> Vec<ReservationFile> {
        serde_norway::from_str(text).unwrap()
    }

    const BLOCK: &str = "- {id: cr-0a1b2c3d, type: capacity-block, start: \"2026-03-02T09:00:00Z\", \
                         end: \"2026-03-03T09:00:00Z\", total: 4}";

    #[test]
    fn a_block_group_reads_its_block_with_every_instance_available() {
        let read = read_reservations(CapacityType::CapacityBlock, &file(BLOCK)).unwrap();
        assert_eq!(read.len(), 1);
        assert_eq!((read[0].total, read[0].available), (4, 4));
        assert_eq!(read[0].kind, ReservationType::CapacityBlock);
    }

    #[test]
    fn reservations_that_do_not_fit_the_group_are_refused_naming_the_field() {
        let field = |c, text: &str| read_reservations(c, &file(text)).unwrap_err().field;
        assert_eq!(field(CapacityType::CapacityBlock, "[]"), "reservations");
        assert_eq!(field(CapacityType::OnDemand, BLOCK), "reservations[0].type");
        assert_eq!(
            field(CapacityType::Spot, "- {id: cr-1, type: odcr, total: 2}"),
            "reservations[0].type"
        );
        let twice = "- {id: cr-1, type: odcr, total: 2}\n- {id: cr-1, type: odcr, total: 1}";
        assert_eq!(field(CapacityType::OnDemand, twice), "reservations[1].id");
        let late = "- {id: cr-1, type: odcr, total: 2, end: \"tomorrow\"}";
        assert_eq!(field(CapacityType::OnDemand, late), "reservations[0].end");
        let over = "- {id: cr-1, type: odcr, total: 2, available: 3}";
        assert_eq!(
            field(CapacityType::OnDemand, over),
            "reservations[0].available"
        );
        assert!(
            read_reservations(
                CapacityType::OnDemand,
                &file("- {id: cr-1, type: odcr, total: 2}")
            )
            .is_ok()
        );
    }
}
