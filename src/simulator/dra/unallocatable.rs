//! Why a pod's claims cannot be allocated on a node, in the scheduler's words. The variants tell "does not
//! fit here" (another node, or a new one, may do) from "can never fit" (a selector that fails, a class that
//! does not exist, more devices than a claim may hold): see [`Unallocatable::never_fits`].

use crate::model::{DeviceId, Name};
use crate::simulator::dra::cel::selector::{SelectorError, SelectorErrorKind};
use std::fmt;

/// How many devices a request wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wanted {
    Count(u32),
    All,
}

/// Which request of which claim (`claim` is the index in the claims given to `allocate`; `request` is
/// `request` or `request/sub-request`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestRef {
    pub claim: usize,
    /// How many claims were allocated together (the claim is named only when there were several).
    pub claims: usize,
    pub request: Name,
}

impl fmt::Display for RequestRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, &[])
    }
}

impl RequestRef {
    /// The request, after its claim: by the claim's name when `names` (the claims given to `allocate`, in
    /// order) has it, else by its place among several.
    fn write(&self, f: &mut fmt::Formatter<'_>, names: &[Name]) -> fmt::Result {
        match names.get(self.claim) {
            Some(name) => write!(f, "resourceclaim {name}, ")?,
            None if self.claims > 1 => write!(f, "claim #{}, ", self.claim + 1)?,
            None => {}
        }
        write!(f, "request {:?}", self.request)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unallocatable {
    /// The node has too few free devices for one request.
    NoFit {
        request: RequestRef,
        class: Name,
        wanted: Wanted,
        matching: usize,
        free: usize,
    },
    /// Each request could be met alone, but not all at once (devices, counters or constraints shared).
    NotTogether,
    /// Nothing fit, and some of the node's pools are invalid (`ErrFailedAllocationOnNode`).
    InvalidPools(Vec<String>),
    /// An "All" request over a pool that is being updated (incomplete) or is invalid.
    PoolNotReady {
        request: RequestRef,
        pool: String,
    },
    /// An "All" request's devices break a constraint of the claim.
    ConstraintViolated {
        request: RequestRef,
        device: DeviceId,
    },
    /// A selector does not compile, fails at run time or is not a bool.
    Selector {
        request: RequestRef,
        class: Name,
        in_class: bool,
        error: SelectorError,
    },
    UnknownClass {
        request: RequestRef,
        class: Name,
    },
    /// A claim asks for more devices than an allocation may hold (32).
    TooManyDevices {
        claim: usize,
        devices: usize,
    },
    /// A request the API would not have accepted.
    InvalidRequest {
        request: RequestRef,
        reason: String,
    },
}

impl Unallocatable {
    /// Whether no node can help: the claims are wrong, not the node. A selector that fails at run time
    /// fails on some devices only (an attribute one device type lacks), so it is not counted here; note
    /// that kube-scheduler aborts the pod's scheduling cycle on it wherever it happens.
    pub fn never_fits(&self) -> bool {
        match self {
            Unallocatable::Selector { error, .. } => error.kind == SelectorErrorKind::Compile,
            Unallocatable::UnknownClass { .. }
            | Unallocatable::TooManyDevices { .. }
            | Unallocatable::InvalidRequest { .. } => true,
            _ => false,
        }
    }
}

fn devices(n: usize) -> String {
    if n == 1 {
        "1 matching device".to_string()
    } else {
        format!("{n} matching devices")
    }
}

/// [`Unallocatable`] with each claim named (see [`Unallocatable::named`]).
pub struct Named<'a> {
    why: &'a Unallocatable,
    names: &'a [Name],
}

impl Unallocatable {
    /// The reason with its claim named as `names` (the claims given to `allocate`, in order) name them
    /// (`resourceclaim ml/train-0-gpu-x7k2p, request "gpu"`): what a user looks for among a pod's claims.
    pub fn named<'a>(&'a self, names: &'a [Name]) -> Named<'a> {
        Named { why: self, names }
    }
}

impl fmt::Display for Unallocatable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.named(&[]).fmt(f)
    }
}

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = self.names;
        // `{request}` below: the request after its claim's name.
        struct At<'r>(&'r RequestRef, &'r [Name]);
        impl fmt::Display for At<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.write(f, self.1)
            }
        }
        match self.why {
            Unallocatable::NoFit {
                request,
                class,
                wanted,
                matching,
                free,
            } => {
                let request = At(request, names);
                let wanted = match wanted {
                    Wanted::Count(1) => "1 device".to_string(),
                    Wanted::Count(n) => format!("{n} devices"),
                    Wanted::All => "all devices".to_string(),
                };
                write!(
                    f,
                    "cannot allocate all claims: {request} (class {class}, {wanted}): the node has {}, \
                     {free} free",
                    devices(*matching)
                )
            }
            Unallocatable::NotTogether => write!(
                f,
                "cannot allocate all claims: each request has free matching devices, but not all at \
                 once (devices, counters or constraints they share)"
            ),
            Unallocatable::InvalidPools(pools) => write!(
                f,
                "cannot allocate all claims: invalid resource pools were encountered: {}",
                pools.join("; ")
            ),
            Unallocatable::PoolNotReady { request, pool } => write!(
                f,
                "{request}: asks for all devices, but resource pool {pool} is currently being \
                 updated or is invalid",
                request = At(request, names)
            ),
            Unallocatable::ConstraintViolated { request, device } => write!(
                f,
                "{request}: cannot add device {}/{}/{} because a claim constraint would not be \
                 satisfied",
                device.driver,
                device.pool,
                device.device,
                request = At(request, names)
            ),
            Unallocatable::Selector {
                request,
                class,
                in_class,
                error,
            } => {
                let request = At(request, names);
                if *in_class {
                    write!(f, "{request}: class {class}: {error}")
                } else {
                    write!(f, "{request}: {error}")
                }
            }
            Unallocatable::UnknownClass { request, class } => {
                let request = At(request, names);
                write!(f, "{request}: device class {class} not found")
            }
            Unallocatable::TooManyDevices { claim, devices } => {
                match names.get(*claim) {
                    Some(name) => write!(f, "resourceclaim {name}")?,
                    None => write!(f, "claim #{}", claim + 1)?,
                }
                write!(
                    f,
                    ": number of requested devices {devices} exceeds the claim limit of 32"
                )
            }
            Unallocatable::InvalidRequest { request, reason } => {
                write!(f, "{}: {reason}", At(request, names))
            }
        }
    }
}

impl std::error::Error for Unallocatable {}
