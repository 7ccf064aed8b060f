//! A simulated group's capacity reservations as EC2 and EKS live them, on the simulated clock. The group's
//! instances fill its active reservations in order; an ODCR group's instances past them run as plain
//! On-Demand (EC2's `open` preference). A Capacity Block group launches only into its block, from the block's
//! start until EKS scales the group in, 40 minutes before its end, and no more instances than the block
//! holds: what it asks for beyond that waits as placeholders, as a stockout does. At `end - 40 min` EKS scales
//! the group to 0 (its instances go through deletion); at `end - 30 min` EC2 terminates any still there.

use crate::cloud::simulated_eks::fleet::Fleet;
use crate::model::{
    CAPACITY_BLOCK_SCALE_IN_LEAD, CAPACITY_BLOCK_TERMINATION_LEAD, CapacityType, Reservation,
    ReservationType,
};
use std::time::{Duration, SystemTime};

/// A group's reservations and how far each Capacity Block's end has gone.
pub struct GroupReservations {
    /// The wall-clock time the simulated clock's zero stands for.
    epoch: SystemTime,
    capacity_type: CapacityType,
    held: Vec<Held>,
}

/// One reservation of the group.
struct Held {
    /// As the scenario gives it.
    reservation: Reservation,
    /// Instances of it held by instances outside the group, for the whole scenario (`total - available` as
    /// the scenario gives them): the group's own instances fill the rest.
    others: u32,
    end: BlockEnd,
}

/// How far a Capacity Block's end has gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockEnd {
    /// Not yet scaled in (or not a Capacity Block).
    Open,
    /// EKS scaled the group to 0.
    ScaledIn,
    /// EC2 terminated what was left.
    Terminated,
}

impl Held {
    /// Instances the group may run in it.
    fn room(&self) -> u32 {
        self.reservation.total - self.others
    }

    /// The window new instances may be asked for in, if it is a Capacity Block: `[start, end - 40 min)`.
    fn window(&self) -> Option<(SystemTime, SystemTime)> {
        self.reservation.scale_up_window()
    }

    fn takes_new_instances(&self, wall: SystemTime) -> bool {
        self.end == BlockEnd::Open
            && self
                .window()
                .is_some_and(|(start, close)| start <= wall && wall < close)
    }
}

impl GroupReservations {
    pub(in crate::cloud::simulated_eks) fn new(
        capacity_type: CapacityType,
        reservations: &[Reservation],
        epoch: SystemTime,
    ) -> GroupReservations {
        let held = (reservations.iter())
            .map(|r| Held {
                reservation: r.clone(),
                others: r.total - r.available,
                end: BlockEnd::Open,
            })
            .collect();
        GroupReservations {
            epoch,
            capacity_type,
            held,
        }
    }

    /// Simulated clock time -> wall-clock time.
    fn wall(&self, at: Duration) -> SystemTime {
        self.epoch + at
    }

    /// Wall-clock time -> simulated clock time (never before its zero).
    fn clock(&self, at: SystemTime) -> Duration {
        at.duration_since(self.epoch).unwrap_or(Duration::ZERO)
    }

    fn is_block_group(&self) -> bool {
        self.capacity_type == CapacityType::CapacityBlock
    }

    fn blocks(&self) -> impl Iterator<Item = &Held> {
        (self.held.iter()).filter(|h| h.reservation.kind == ReservationType::CapacityBlock)
    }

    /// When the next step of a block's end is due: EKS's scale-in, then EC2's termination.
    pub(in crate::cloud::simulated_eks) fn next_at(&self) -> Option<Duration> {
        self.blocks().filter_map(|h| self.due(h)).min()
    }

    fn due(&self, held: &Held) -> Option<Duration> {
        let end = held.reservation.end?;
        let lead = match held.end {
            BlockEnd::Open => CAPACITY_BLOCK_SCALE_IN_LEAD,
            BlockEnd::ScaledIn => CAPACITY_BLOCK_TERMINATION_LEAD,
            BlockEnd::Terminated => return None,
        };
        let at = end.checked_sub(lead).unwrap_or(self.epoch);
        Some(self.clock(at))
    }

    /// Takes the block-end step due by `at`, if one is: EKS scales the group to 0 (every instance it has goes
    /// through deletion, `target` set to 0), or EC2 terminates what is left (the ids returned, to be removed
    /// at once).
    pub(in crate::cloud::simulated_eks) fn step(
        &mut self,
        at: Duration,
        fleet: &mut Fleet<'_>,
        target: &mut i32,
    ) -> Vec<String> {
        let due = (0..self.held.len())
            .filter(|&i| self.held[i].reservation.kind == ReservationType::CapacityBlock)
            .filter(|&i| self.due(&self.held[i]).is_some_and(|d| d <= at))
            .min_by_key(|&i| self.due(&self.held[i]));
        let Some(i) = due else {
            return Vec::new();
        };
        let held = &mut self.held[i];
        match held.end {
            BlockEnd::Open => {
                held.end = BlockEnd::ScaledIn;
                *target = 0;
                fleet.surges.clear();
                for instance in fleet.instances.iter_mut().filter(|i| i.is_live()) {
                    instance.deleting_since = Some(at);
                }
                Vec::new()
            }
            BlockEnd::ScaledIn => {
                held.end = BlockEnd::Terminated;
                fleet.instances.iter().map(|i| i.id.clone()).collect()
            }
            BlockEnd::Terminated => Vec::new(),
        }
    }

    /// How many more instances the group can launch at `now` with `listed` instances (deleting ones
    /// included): for a Capacity Block group, what its blocks taking new instances hold and these do not
    /// fill; `None` (no limit of theirs) for other groups.
    pub(in crate::cloud::simulated_eks) fn room(
        &self,
        now: Duration,
        listed: usize,
    ) -> Option<usize> {
        if !self.is_block_group() {
            return None;
        }
        let wall = self.wall(now);
        let room: usize = (self.blocks())
            .filter(|h| h.takes_new_instances(wall))
            .map(|h| h.room() as usize)
            .sum();
        Some(room.saturating_sub(listed))
    }

    /// Why the group takes no new instances at `now`, if it does not: a Capacity Block group outside every
    /// block's window, naming the window (the next one, else the last).
    pub(in crate::cloud::simulated_eks) fn refusal(&self, now: Duration) -> Option<String> {
        if !self.is_block_group() {
            return None;
        }
        let wall = self.wall(now);
        if self.blocks().any(|h| h.takes_new_instances(wall)) {
            return None;
        }
        let next = (self.blocks())
            .filter(|h| h.window().is_some_and(|(start, _)| wall < start))
            .min_by_key(|h| h.reservation.start);
        let held = next.or_else(|| self.blocks().max_by_key(|h| h.reservation.end))?;
        let (start, close) = held.window()?;
        let stamp = humantime::format_rfc3339_seconds;
        Some(format!(
            "capacity block {} takes new instances only from {} until {} (EKS scales the group to 0 \
             40 minutes before the block ends at {}); it is {}",
            held.reservation.id,
            stamp(start),
            stamp(close),
            stamp(held.reservation.end.unwrap_or(close)),
            stamp(wall)
        ))
    }

    /// Why capacity asked for at `now` does not launch, when the group's reservations are the reason: a
    /// Capacity Block group outside its window, or its blocks full (InsufficientInstanceCapacity, as EC2
    /// says of a full reservation).
    pub(in crate::cloud::simulated_eks) fn shortage(&self, now: Duration) -> Option<String> {
        if let Some(refusal) = self.refusal(now) {
            return Some(format!("InsufficientInstanceCapacity: {refusal}"));
        }
        if !self.is_block_group() {
            return None;
        }
        let wall = self.wall(now);
        let full: Vec<String> = (self.blocks())
            .filter(|h| h.takes_new_instances(wall))
            .map(|h| {
                format!(
                    "reservation {} is full ({} instances)",
                    h.reservation.id,
                    h.room()
                )
            })
            .collect();
        Some(format!("InsufficientInstanceCapacity: {}", full.join(", ")))
    }

    /// The reservations with their counts at `now`, the group having `listed` instances (deleting ones
    /// included: they hold their capacity until gone), which fill its active reservations in order.
    pub(in crate::cloud::simulated_eks) fn live(
        &self,
        now: Duration,
        listed: usize,
    ) -> Vec<Reservation> {
        let wall = self.wall(now);
        let mut left = u32::try_from(listed).unwrap_or(u32::MAX);
        (self.held.iter())
            .map(|h| {
                let used = match h.reservation.active(wall) {
                    true => left.min(h.room()),
                    false => 0,
                };
                left -= used;
                Reservation {
                    available: h.room() - used,
                    ..h.reservation.clone()
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::simulated_eks::fleet::SimInstance;

    const MINUTE: Duration = Duration::from_secs(60);

    fn epoch() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    /// A block of 2 from minute 60 to minute 600 of the clock.
    fn block() -> GroupReservations {
        let block = Reservation {
            id: "cr-0b10c".into(),
            kind: ReservationType::CapacityBlock,
            start: Some(epoch() + 60 * MINUTE),
            end: Some(epoch() + 600 * MINUTE),
            total: 3,
            available: 2,
        };
        GroupReservations::new(CapacityType::CapacityBlock, &[block], epoch())
    }

    fn instance(n: usize) -> SimInstance {
        SimInstance {
            id: format!("i-{n}"),
            zone: 0,
            running_at: Duration::ZERO,
            deleting_since: None,
        }
    }

    #[test]
    fn a_block_group_takes_instances_only_in_its_window_and_only_what_the_block_holds() {
        let b = block();
        assert_eq!(b.room(59 * MINUTE, 0), Some(0));
        assert!(b.refusal(59 * MINUTE).unwrap().contains("cr-0b10c"));
        assert_eq!(b.room(60 * MINUTE, 0), Some(2), "one of 3 held outside");
        assert_eq!(b.room(60 * MINUTE, 1), Some(1));
        assert_eq!(b.refusal(60 * MINUTE), None);
        assert!(b.shortage(60 * MINUTE).unwrap().contains("is full"));
        assert_eq!(b.room(559 * MINUTE, 0), Some(2));
        assert_eq!(
            b.room(560 * MINUTE, 0),
            Some(0),
            "40 minutes before its end"
        );
        assert!(b.refusal(560 * MINUTE).is_some());
    }

    #[test]
    fn eks_scales_the_group_to_zero_then_ec2_terminates_what_is_left() {
        let mut b = block();
        let mut instances = vec![instance(1), instance(2)];
        let mut surges = vec!["i-2".to_string()];
        let mut target = 2;
        assert_eq!(b.next_at(), Some(560 * MINUTE));
        let mut fleet = Fleet {
            instances: &mut instances,
            surges: &mut surges,
            provisioning_delay: Duration::ZERO,
        };
        assert_eq!(
            b.step(559 * MINUTE, &mut fleet, &mut target),
            Vec::<String>::new()
        );
        assert_eq!(target, 2, "nothing is due yet");
        assert!(b.step(560 * MINUTE, &mut fleet, &mut target).is_empty());
        assert_eq!(target, 0);
        assert!(fleet.surges.is_empty());
        assert!(
            fleet
                .instances
                .iter()
                .all(|i| i.deleting_since == Some(560 * MINUTE))
        );
        assert_eq!(b.next_at(), Some(570 * MINUTE));
        let gone = b.step(570 * MINUTE, &mut fleet, &mut target);
        assert_eq!(gone, ["i-1", "i-2"]);
        assert_eq!(b.next_at(), None);
    }

    #[test]
    fn instances_fill_the_active_reservations_in_order() {
        let odcr = |id: &str, total, start: u32| Reservation {
            id: id.into(),
            kind: ReservationType::Odcr,
            start: Some(epoch() + start * MINUTE),
            end: None,
            total,
            available: total,
        };
        let r = GroupReservations::new(
            CapacityType::OnDemand,
            &[odcr("cr-1", 2, 0), odcr("cr-2", 2, 0), odcr("cr-3", 5, 100)],
            epoch(),
        );
        let available =
            |listed| -> Vec<u32> { r.live(MINUTE, listed).iter().map(|r| r.available).collect() };
        assert_eq!(available(0), [2, 2, 5]);
        assert_eq!(available(3), [0, 1, 5]);
        assert_eq!(
            available(6),
            [0, 0, 5],
            "two run as plain On-Demand; cr-3 not yet active"
        );
        assert_eq!(
            r.room(MINUTE, 6),
            None,
            "an ODCR group is not limited by its reservations"
        );
        assert_eq!(r.refusal(MINUTE), None);
    }
}
