//! The allocator's validation pass (`Allocate` before the search): each request's class and selectors
//! resolved, counts checked, "All" requests' devices collected, the claim's 32-result limit checked. What
//! the search then reads: which devices of the node an ask may take, in pool then slice order.

use crate::model::{AllocationMode, ClaimSpec, DeviceAsk, DeviceRequest, MatchAttribute, Name};
use crate::simulator::dra::classes::{DeviceClasses, SelectorSet};
use crate::simulator::dra::pools::{NodePool, PoolState};
use crate::simulator::dra::unallocatable::{RequestRef, Unallocatable};
use std::sync::Arc;

/// `AllocationResultsMaxSize`: results one claim's allocation may hold.
pub(crate) const MAX_RESULTS: usize = 32;

/// `DeviceConstraintsMaxSize`: constraints one claim may have.
const MAX_CONSTRAINTS: usize = 32;

/// A device of the node: (index in the node's pools, index in that pool's devices).
pub(crate) type DevRef = (u32, u32);

pub(crate) struct AskData<'a> {
    /// `request` or `request/sub-request`, as results name it.
    pub(crate) result_name: Name,
    pub(crate) ask: &'a DeviceAsk,
    pub(crate) set: Arc<SelectorSet>,
    /// Mode All: every selectable device the node reaches.
    pub(crate) all: Option<Vec<DevRef>>,
}

pub(crate) struct RequestData<'a> {
    pub(crate) name: Name,
    pub(crate) first_available: bool,
    pub(crate) asks: Vec<AskData<'a>>,
}

pub(crate) struct ClaimData<'a> {
    pub(crate) requests: Vec<RequestData<'a>>,
    pub(crate) constraints: &'a [MatchAttribute],
}

/// Whether an ask may take a device, evaluated through the device's verdict cache. A failing selector
/// makes the device not match; the first such failure is kept to explain a failed allocation.
pub(crate) struct Selection<'p> {
    pub(crate) pools: &'p [NodePool],
    pub(crate) claims: usize,
    pub(crate) failure: Option<Unallocatable>,
}

impl Selection<'_> {
    pub(crate) fn selectable(&mut self, claim: usize, ask: &AskData, dev: DevRef) -> bool {
        let pooled = &self.pools[dev.0 as usize].pool.devices[dev.1 as usize];
        // The stable allocator does not support binding conditions: such devices are never picked.
        if pooled.device().binding_conditions {
            return false;
        }
        match pooled.selected_by(&ask.set) {
            Ok(selected) => selected,
            Err(failure) => {
                if self.failure.is_none() {
                    self.failure = Some(Unallocatable::Selector {
                        request: RequestRef {
                            claim,
                            claims: self.claims,
                            request: ask.result_name.clone(),
                        },
                        class: ask.set.class.clone(),
                        in_class: failure.in_class,
                        error: failure.error,
                    });
                }
                false
            }
        }
    }
}

/// The devices of complete, valid pools the node reaches, in (driver, pool, slice, device) order.
pub(crate) fn candidates(pools: &[NodePool]) -> Vec<DevRef> {
    (pools.iter().enumerate())
        .filter(|(_, p)| p.pool.state == PoolState::Complete)
        .flat_map(|(i, p)| p.visible.iter().map(move |&d| (i as u32, d)))
        .collect()
}

/// Validates the claims and resolves what the search needs.
pub(crate) fn prepare<'a>(
    classes: &DeviceClasses,
    selection: &mut Selection,
    claims: &[&'a ClaimSpec],
) -> Result<Vec<ClaimData<'a>>, Unallocatable> {
    let mut prepared = Vec::with_capacity(claims.len());
    for (c, claim) in claims.iter().enumerate() {
        let at = ClaimAt {
            claim: c,
            claims: claims.len(),
        };
        let mut requests = Vec::with_capacity(claim.requests.len());
        let mut minimum = 0usize;
        for request in &claim.requests {
            let (data, request_minimum) = prepare_request(classes, selection, at, request)?;
            minimum += request_minimum;
            requests.push(data);
        }
        if claim.constraints.len() > MAX_CONSTRAINTS {
            return Err(Unallocatable::InvalidRequest {
                request: at.request("".into()),
                reason: format!(
                    "{} constraints, more than the limit of {MAX_CONSTRAINTS}",
                    claim.constraints.len()
                ),
            });
        }
        if minimum > MAX_RESULTS {
            return Err(Unallocatable::TooManyDevices {
                claim: c,
                devices: minimum,
            });
        }
        prepared.push(ClaimData {
            requests,
            constraints: &claim.constraints,
        });
    }
    Ok(prepared)
}

/// Which claim is being prepared, of how many: what a [`RequestRef`] names besides the request.
#[derive(Clone, Copy)]
struct ClaimAt {
    claim: usize,
    claims: usize,
}

impl ClaimAt {
    fn request(self, request: Name) -> RequestRef {
        RequestRef {
            claim: self.claim,
            claims: self.claims,
            request,
        }
    }
}

/// One request's asks resolved, with the fewest devices any of them needs.
fn prepare_request<'a>(
    classes: &DeviceClasses,
    selection: &mut Selection,
    at: ClaimAt,
    request: &'a DeviceRequest,
) -> Result<(RequestData<'a>, usize), Unallocatable> {
    let mut asks = Vec::with_capacity(request.asks.len());
    let mut request_minimum = usize::MAX;
    for ask in &request.asks {
        let (data, ask_minimum) = prepare_ask(classes, selection, at, request, ask)?;
        request_minimum = request_minimum.min(ask_minimum);
        asks.push(data);
    }
    if asks.is_empty() {
        return Err(Unallocatable::InvalidRequest {
            request: at.request(request.name.clone()),
            reason: "neither exactly nor firstAvailable is set".to_string(),
        });
    }
    let data = RequestData {
        name: request.name.clone(),
        first_available: request.first_available,
        asks,
    };
    Ok((data, request_minimum))
}

/// One ask (a request, or a sub-request of `firstAvailable`) checked and resolved, with how many devices
/// it needs at least.
fn prepare_ask<'a>(
    classes: &DeviceClasses,
    selection: &mut Selection,
    at: ClaimAt,
    request: &DeviceRequest,
    ask: &'a DeviceAsk,
) -> Result<(AskData<'a>, usize), Unallocatable> {
    let result_name: Name = if request.first_available {
        format!("{}/{}", request.name, ask.name).into()
    } else {
        request.name.clone()
    };
    let request_at = at.request(result_name.clone());
    if request.first_available && ask.admin_access {
        return Err(Unallocatable::InvalidRequest {
            request: request_at,
            reason: "a sub-request cannot ask for admin access".to_string(),
        });
    }
    let set = classes
        .selector_set(&ask.class, &ask.selectors)
        .ok_or_else(|| Unallocatable::UnknownClass {
            request: request_at.clone(),
            class: ask.class.clone(),
        })?;
    let mut data = AskData {
        result_name,
        ask,
        set,
        all: None,
    };
    let minimum = match ask.mode {
        AllocationMode::ExactCount(0) => {
            return Err(Unallocatable::InvalidRequest {
                request: request_at,
                reason: "count must be greater than zero".to_string(),
            });
        }
        AllocationMode::ExactCount(n) => n as usize,
        AllocationMode::All => {
            let all = all_devices(selection, at.claim, &data, request_at)?;
            let minimum = all.len();
            data.all = Some(all);
            minimum
        }
    };
    Ok((data, minimum))
}

/// Mode All: every device of the node the ask may take; every pool must be complete.
fn all_devices(
    selection: &mut Selection,
    claim: usize,
    data: &AskData,
    request_at: RequestRef,
) -> Result<Vec<DevRef>, Unallocatable> {
    let mut all = Vec::new();
    for (i, pool) in selection.pools.iter().enumerate() {
        if pool.pool.state != PoolState::Complete {
            return Err(Unallocatable::PoolNotReady {
                request: request_at,
                pool: format!("{}/{}", pool.pool.driver, pool.pool.name),
            });
        }
        for &d in pool.visible.iter() {
            if selection.selectable(claim, data, (i as u32, d)) {
                all.push((i as u32, d));
            }
        }
    }
    Ok(all)
}
