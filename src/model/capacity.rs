//! Capacity paid for or held ahead: a managed node group's capacity type, and the EC2 capacity reservations its
//! launch template targets (On-Demand Capacity Reservations, and Capacity Blocks for ML: a block of GPU
//! instances reserved for a fixed window). The provider says them (`ekscale.v1.NodeGroups/DescribeNodeGroups`);
//! the companion plans with them.

use super::invalid::Invalid;
use std::time::{Duration, SystemTime};

/// EKS scales a Capacity Block node group to 0 this long before its block ends (the EKS user guide, "Capacity
/// Blocks for ML" in managed node groups): no new node of it may be asked for from then on.
pub const CAPACITY_BLOCK_SCALE_IN_LEAD: Duration = Duration::from_secs(40 * 60);

/// EC2 terminates a Capacity Block's instances this long before the block ends.
pub const CAPACITY_BLOCK_TERMINATION_LEAD: Duration = Duration::from_secs(30 * 60);

/// How long before EKS scales a Capacity Block group in that its pods are planned elsewhere, when the
/// disruption configuration's `drainLead` does not say.
pub const DEFAULT_DRAIN_LEAD: Duration = Duration::from_secs(10 * 60);

/// Karpenter's capacity type label: `reserved` on a node of capacity reserved ahead (a Capacity Block, an
/// ODCR), `on-demand` and `spot` otherwise. Upstream's scheduler reads it in a pod's node affinity.
pub const KARPENTER_CAPACITY_TYPE_LABEL: &str = "karpenter.sh/capacity-type";

/// A managed node group's capacity type, in EKS's words (`capacityType`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CapacityType {
    #[default]
    OnDemand,
    Spot,
    /// EC2 Capacity Blocks for ML: instances only within the block's window.
    CapacityBlock,
}

impl CapacityType {
    pub const ALL: [CapacityType; 3] = [
        CapacityType::OnDemand,
        CapacityType::Spot,
        CapacityType::CapacityBlock,
    ];

    /// As EKS writes it: `ON_DEMAND`, `SPOT`, `CAPACITY_BLOCK`.
    pub fn as_str(self) -> &'static str {
        match self {
            CapacityType::OnDemand => "ON_DEMAND",
            CapacityType::Spot => "SPOT",
            CapacityType::CapacityBlock => "CAPACITY_BLOCK",
        }
    }

    /// The type EKS's word names, exactly as [`CapacityType::as_str`] writes it.
    pub fn parse(word: &str) -> Result<CapacityType, Invalid> {
        (Self::ALL.into_iter().find(|c| c.as_str() == word)).ok_or_else(|| {
            Invalid::new(
                "capacityType",
                format!("{word:?} is none of ON_DEMAND, SPOT, CAPACITY_BLOCK"),
            )
        })
    }
}

impl std::fmt::Display for CapacityType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of EC2 capacity reservation (DescribeCapacityReservations' `ReservationType`: `capacity-block`,
/// or `default` for an On-Demand Capacity Reservation, which we call `odcr` as Karpenter's docs do).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReservationType {
    CapacityBlock,
    Odcr,
}

impl ReservationType {
    pub fn as_str(self) -> &'static str {
        match self {
            ReservationType::CapacityBlock => "capacity-block",
            ReservationType::Odcr => "odcr",
        }
    }

    pub fn parse(word: &str) -> Result<ReservationType, Invalid> {
        match word {
            "capacity-block" => Ok(ReservationType::CapacityBlock),
            "odcr" => Ok(ReservationType::Odcr),
            _ => Err(Invalid::new(
                "type",
                format!("{word:?} is none of capacity-block, odcr"),
            )),
        }
    }
}

impl std::fmt::Display for ReservationType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An EC2 capacity reservation a node group's launch template targets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// `cr-...`.
    pub id: String,
    pub kind: ReservationType,
    /// When it starts; `None` for an ODCR active since it was made.
    pub start: Option<SystemTime>,
    /// When it ends; `None` for an open-ended ODCR.
    pub end: Option<SystemTime>,
    /// Instances it holds.
    pub total: u32,
    /// Of them, not running an instance now.
    pub available: u32,
}

impl Reservation {
    /// Whether it is in force at `now`: `start <= now < end`.
    pub fn active(&self, now: SystemTime) -> bool {
        self.start.is_none_or(|s| s <= now) && self.end.is_none_or(|e| now < e)
    }

    /// For a Capacity Block: the window new nodes may be asked for in, `[start, end - 40 min)` (EKS scales
    /// the group to 0 at its end). `None` for an ODCR.
    pub fn scale_up_window(&self) -> Option<(SystemTime, SystemTime)> {
        if self.kind != ReservationType::CapacityBlock {
            return None;
        }
        let start = self.start.unwrap_or(SystemTime::UNIX_EPOCH);
        let end = self.end?;
        let close = end
            .checked_sub(CAPACITY_BLOCK_SCALE_IN_LEAD)
            .unwrap_or(start);
        Some((start, close.max(start)))
    }

    /// Checks the rules a reservation keeps, naming the field that breaks one.
    pub fn validate(&self) -> Result<(), Invalid> {
        let well_formed = self
            .id
            .strip_prefix("cr-")
            .is_some_and(|hex| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()));
        if !well_formed {
            return Err(Invalid::new(
                "id",
                format!(
                    "{:?} is not a capacity reservation id (cr- and hex digits)",
                    self.id
                ),
            ));
        }
        if self.available > self.total {
            return Err(Invalid::new(
                "available",
                format!("{} is more than total {}", self.available, self.total),
            ));
        }
        if self.kind == ReservationType::CapacityBlock
            && (self.start.is_none() || self.end.is_none())
        {
            return Err(Invalid::new(
                if self.start.is_none() { "start" } else { "end" },
                "a capacity block has a start and an end",
            ));
        }
        if let (Some(start), Some(end)) = (self.start, self.end)
            && end <= start
        {
            return Err(Invalid::new("end", "must be after start"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + minutes * 60)
    }

    fn block(start: u64, end: u64) -> Reservation {
        Reservation {
            id: "cr-0123abcd".into(),
            kind: ReservationType::CapacityBlock,
            start: Some(at(start)),
            end: Some(at(end)),
            total: 4,
            available: 4,
        }
    }

    #[test]
    fn a_block_is_active_from_its_start_until_its_end() {
        let b = block(60, 600);
        assert!(!b.active(at(59)));
        assert!(b.active(at(60)));
        assert!(b.active(at(599)));
        assert!(!b.active(at(600)));
    }

    #[test]
    fn a_block_takes_new_nodes_until_forty_minutes_before_its_end() {
        assert_eq!(block(60, 600).scale_up_window(), Some((at(60), at(560))));
        // A block shorter than the lead has an empty window.
        assert_eq!(block(60, 90).scale_up_window(), Some((at(60), at(60))));
        let odcr = Reservation {
            kind: ReservationType::Odcr,
            start: None,
            end: None,
            ..block(0, 1)
        };
        assert_eq!(odcr.scale_up_window(), None);
        assert!(odcr.active(at(0)));
        assert_eq!(odcr.validate(), Ok(()));
    }

    #[test]
    fn broken_reservations_name_the_field() {
        let field = |r: Reservation| r.validate().unwrap_err().field;
        assert_eq!(
            field(Reservation {
                id: "r-1".into(),
                ..block(0, 60)
            }),
            "id"
        );
        assert_eq!(
            field(Reservation {
                available: 5,
                ..block(0, 60)
            }),
            "available"
        );
        assert_eq!(
            field(Reservation {
                end: None,
                ..block(0, 60)
            }),
            "end"
        );
        assert_eq!(field(block(60, 60)), "end");
    }

    #[test]
    fn capacity_types_read_as_eks_writes_them() {
        for c in CapacityType::ALL {
            assert_eq!(CapacityType::parse(c.as_str()), Ok(c));
        }
        assert_eq!(
            CapacityType::parse("spot").unwrap_err().field,
            "capacityType"
        );
        assert_eq!(ReservationType::parse("odcr"), Ok(ReservationType::Odcr));
        assert!(ReservationType::parse("default").is_err());
    }
}
