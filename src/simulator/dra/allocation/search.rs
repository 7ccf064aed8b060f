//! The depth-first search of the stable allocator (`allocateOne`): claims, then requests, then each device
//! slot of a request, trying the node's devices in order and backtracking; the first complete solution
//! wins. firstAvailable tries its sub-requests in order; "All" takes every matching device or fails.
//!
//! One pruning the scheduler does not make: a request's later slots only try devices after the one an
//! earlier slot took. Whether the rest of the search succeeds depends on the set of devices taken, not on
//! their order, so the first solution found is the same, without trying each set in every order.

use super::constraint::ConstraintState;
use super::counters::Counters;
use super::prepare::{AskData, ClaimData, DevRef, MAX_RESULTS, Selection};
use super::taints::tolerated;
use crate::model::{AllocationMode, DeviceAsk};
use crate::simulator::dra::in_use::InUse;
use crate::simulator::dra::pools::NodePool;
use crate::simulator::dra::unallocatable::{RequestRef, Unallocatable};

/// Why a branch stopped other than "no device fits".
pub(crate) enum Abort {
    /// The claim would exceed 32 results: backtrack into an earlier sub-request choice.
    MaxSize,
    Fatal(Unallocatable),
}

/// One device taken for a claim.
pub(crate) struct Taken {
    pub(crate) claim: usize,
    pub(crate) request: usize,
    pub(crate) ask: usize,
    pub(crate) dev: DevRef,
    /// Bit i: the device was added to constraint i of its claim.
    constraints: u64,
}

pub(crate) struct Search<'a, 'p> {
    pub(crate) claims: &'a [ClaimData<'a>],
    pools: &'p [NodePool],
    selection: Selection<'p>,
    /// Devices the node may allocate from, in order.
    candidates: Vec<DevRef>,
    /// Per node pool, per device: in use by an existing allocation.
    in_use: Vec<Vec<bool>>,
    counters: Vec<Option<Counters>>,
    constraints: Vec<Vec<ConstraintState<'a>>>,
    /// Devices taken so far, in order (the results, per claim, in this order).
    pub(crate) taken: Vec<Taken>,
    per_claim: Vec<usize>,
}

type Step = Result<bool, Abort>;

/// Where the search stands: slot `slot` of ask `ask` of request `request` of claim `claim`; `from` is the
/// first candidate the slot may take; `in_sub`: a firstAvailable request whose sub-request is chosen.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    claim: usize,
    request: usize,
    ask: usize,
    slot: usize,
    from: usize,
    in_sub: bool,
}

impl Cursor {
    /// The first slot of claim `claim`'s first request.
    fn claim(claim: usize) -> Cursor {
        Cursor {
            claim,
            request: 0,
            ask: 0,
            slot: 0,
            from: 0,
            in_sub: false,
        }
    }

    /// The first slot of the request after this one.
    fn next_request(self) -> Cursor {
        Cursor {
            request: self.request + 1,
            ..Cursor::claim(self.claim)
        }
    }

    /// The first slot of sub-request `sub` of this firstAvailable request.
    fn sub_request(self, sub: usize) -> Cursor {
        Cursor {
            request: self.request,
            ask: sub,
            in_sub: true,
            ..Cursor::claim(self.claim)
        }
    }

    /// The next slot of this ask, which may take only candidates after `at`.
    fn next_slot(self, at: usize) -> Cursor {
        Cursor {
            slot: self.slot + 1,
            from: at + 1,
            ..self
        }
    }
}

/// What a device that breaks the claim's constraints means to the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Broken {
    /// An All request must take every device: the claim cannot be allocated.
    Fatal,
    /// Another device may do: this one is not taken.
    TryNext,
}

impl<'a, 'p> Search<'a, 'p> {
    pub(crate) fn new(
        claims: &'a [ClaimData<'a>],
        selection: Selection<'p>,
        in_use: &InUse,
        candidates: Vec<DevRef>,
    ) -> Search<'a, 'p> {
        let pools = selection.pools;
        let mut flags: Vec<Vec<bool>> = pools
            .iter()
            .map(|p| vec![false; p.pool.devices.len()])
            .collect();
        if !in_use.is_empty() {
            for &(p, d) in &candidates {
                flags[p as usize][d as usize] =
                    in_use.contains(&pools[p as usize].pool.devices[d as usize].id);
            }
        }
        Search {
            claims,
            pools,
            selection,
            candidates,
            in_use: flags,
            counters: pools
                .iter()
                .map(|p| Counters::available(&p.pool, in_use))
                .collect(),
            constraints: (claims.iter())
                .map(|c| c.constraints.iter().map(ConstraintState::new).collect())
                .collect(),
            taken: Vec::new(),
            per_claim: vec![0; claims.len()],
        }
    }

    /// Runs the search: `Ok(true)` with `taken` holding the solution.
    pub(crate) fn run(&mut self) -> Result<bool, Unallocatable> {
        match self.one(Cursor::claim(0)) {
            Ok(done) => Ok(done),
            Err(Abort::MaxSize) => Ok(false),
            Err(Abort::Fatal(e)) => Err(e),
        }
    }

    pub(crate) fn into_selection(self) -> Selection<'p> {
        self.selection
    }

    pub(crate) fn ask(&self, claim: usize, request: usize, ask: usize) -> &'a AskData<'a> {
        &self.claims[claim].requests[request].asks[ask]
    }

    /// The slot at `at`, then the rest of the search after it.
    fn one(&mut self, at: Cursor) -> Step {
        let Cursor {
            claim,
            request,
            ask,
            slot,
            from,
            in_sub,
        } = at;
        let claims = self.claims;
        let Some(claim_data) = claims.get(claim) else {
            return Ok(true);
        };
        let Some(request_data) = claim_data.requests.get(request) else {
            return self.one(Cursor::claim(claim + 1));
        };
        if request_data.first_available && !in_sub {
            let mut all_max_size = true;
            for sub in 0..request_data.asks.len() {
                match self.one(at.sub_request(sub)) {
                    Ok(true) => return Ok(true),
                    Ok(false) => all_max_size = false,
                    Err(Abort::MaxSize) => {}
                    Err(fatal) => return Err(fatal),
                }
            }
            return if all_max_size {
                Err(Abort::MaxSize)
            } else {
                Ok(false)
            };
        }
        let data = &request_data.asks[ask];
        match data.ask.mode {
            AllocationMode::All => {
                let all = data.all.as_deref().unwrap_or_default();
                // "At least one device must exist": an All request over no device fails.
                if all.is_empty() {
                    return Ok(false);
                }
                if self.per_claim[claim] + all.len() > MAX_RESULTS {
                    return Err(Abort::MaxSize);
                }
                let before = self.taken.len();
                for &dev in all {
                    match self.take(claim, request, ask, dev, Broken::Fatal) {
                        Ok(true) => {}
                        other => {
                            self.give_back_to(before);
                            return other;
                        }
                    }
                }
                let done = self.one(at.next_request());
                if !matches!(done, Ok(true)) {
                    self.give_back_to(before);
                }
                done
            }
            AllocationMode::ExactCount(count) => {
                let count = count as usize;
                if slot >= count {
                    return self.one(at.next_request());
                }
                if self.per_claim[claim] + count - slot > MAX_RESULTS {
                    return Err(Abort::MaxSize);
                }
                for next in from..self.candidates.len() {
                    let dev = self.candidates[next];
                    if !self.free_for(claim, data.ask, dev)
                        || !self.selection.selectable(claim, data, dev)
                    {
                        continue;
                    }
                    if !self.take(claim, request, ask, dev, Broken::TryNext)? {
                        continue;
                    }
                    let done = self.one(at.next_slot(next));
                    if matches!(done, Ok(true)) {
                        return done;
                    }
                    self.give_back_to(self.taken.len() - 1);
                    done?;
                }
                Ok(false)
            }
        }
    }

    /// The in-use check: normal requests may not take a device allocated already or taken by any claim in
    /// this search; admin access may take allocated devices, but not one its own claim took.
    fn free_for(&self, claim: usize, ask: &DeviceAsk, dev: DevRef) -> bool {
        if ask.admin_access {
            return !self.taken.iter().any(|t| t.claim == claim && t.dev == dev);
        }
        !self.in_use[dev.0 as usize][dev.1 as usize] && !self.taken.iter().any(|t| t.dev == dev)
    }

    /// `allocateDevice`: takes the device if it is free, its counters suffice, its taints are tolerated and
    /// the claim's constraints hold. `on_broken` says what a broken constraint is: fatal for an All request,
    /// for the others a reason to try the next device.
    fn take(
        &mut self,
        claim: usize,
        request: usize,
        ask: usize,
        dev: DevRef,
        on_broken: Broken,
    ) -> Step {
        let data = self.ask(claim, request, ask);
        if !self.free_for(claim, data.ask, dev) {
            return Ok(false);
        }
        let pools = self.pools;
        let pooled = &pools[dev.0 as usize].pool.devices[dev.1 as usize];
        let device = pooled.device();
        if !tolerated(device, &data.ask.tolerations) {
            return Ok(false);
        }
        if let Some(counters) = &mut self.counters[dev.0 as usize]
            && !device.consumes.is_empty()
            && !counters.try_take(device)
        {
            return Ok(false);
        }
        let request_name = &self.claims[claim].requests[request].name;
        let sub: &str = if self.claims[claim].requests[request].first_available {
            &data.ask.name
        } else {
            ""
        };
        let mut added = 0u64;
        let mut broken = false;
        for (i, constraint) in self.constraints[claim].iter_mut().enumerate() {
            match constraint.add(request_name, sub, device) {
                None => {}
                Some(true) => added |= 1 << i,
                Some(false) => {
                    broken = true;
                    break;
                }
            }
        }
        if broken {
            self.undo_constraints(claim, added);
            if let Some(counters) = &mut self.counters[dev.0 as usize]
                && !device.consumes.is_empty()
            {
                counters.give_back(device);
            }
            if on_broken == Broken::Fatal {
                return Err(Abort::Fatal(Unallocatable::ConstraintViolated {
                    request: RequestRef {
                        claim,
                        claims: self.claims.len(),
                        request: data.result_name.clone(),
                    },
                    device: pooled.id.clone(),
                }));
            }
            return Ok(false);
        }
        self.taken.push(Taken {
            claim,
            request,
            ask,
            dev,
            constraints: added,
        });
        self.per_claim[claim] += 1;
        Ok(true)
    }

    fn undo_constraints(&mut self, claim: usize, added: u64) {
        for (i, constraint) in self.constraints[claim].iter_mut().enumerate() {
            if added & (1 << i) != 0 {
                constraint.remove();
            }
        }
    }

    /// Gives back every device taken after the first `keep`.
    fn give_back_to(&mut self, keep: usize) {
        while self.taken.len() > keep {
            let Some(t) = self.taken.pop() else { break };
            self.undo_constraints(t.claim, t.constraints);
            self.per_claim[t.claim] -= 1;
            let device = self.pools[t.dev.0 as usize].pool.devices[t.dev.1 as usize].device();
            if let Some(counters) = &mut self.counters[t.dev.0 as usize]
                && !device.consumes.is_empty()
            {
                counters.give_back(device);
            }
        }
    }
}
