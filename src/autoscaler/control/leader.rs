//! Leader election on a `coordination.k8s.io/v1` Lease, as cluster-autoscaler (client-go) does it: one
//! replica holds the lease and renews it every retry period; the others try every retry period and take it
//! once it has not been renewed for the lease duration. Every write carries the resourceVersion read, so two
//! candidates cannot both win. A leader that cannot renew within the renew deadline has lost: only the leader
//! acts, and it stops at once.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use std::time::{Duration, SystemTime};

/// `--leader-elect-lease-duration`, `-renew-deadline`, `-retry-period` and the Lease's name and namespace.
#[derive(Clone, Debug)]
pub struct Election {
    pub namespace: String,
    pub name: String,
    /// Who we are in `holderIdentity` (the pod's name, as upstream uses the hostname).
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl Election {
    pub fn new(namespace: &str, name: &str, identity: &str) -> Election {
        Election {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("lost the lease {0}: {1}")]
    Lost(String, String),
}

/// One candidate.
pub struct Elector {
    api: Api<Lease>,
    election: Election,
    /// When we last renewed successfully (the `now` of that attempt), while we lead.
    renewed: Option<SystemTime>,
}

fn micro(t: SystemTime) -> Option<MicroTime> {
    k8s_openapi::jiff::Timestamp::try_from(t)
        .ok()
        .map(MicroTime)
}

fn system(t: &MicroTime) -> SystemTime {
    SystemTime::from(t.0)
}

impl Elector {
    pub fn new(client: kube::Client, election: Election) -> Elector {
        Elector {
            api: Api::namespaced(client, &election.namespace),
            election,
            renewed: None,
        }
    }

    pub fn retry_period(&self) -> Duration {
        self.election.retry_period
    }

    pub fn leading(&self) -> bool {
        self.renewed.is_some()
    }

    /// One attempt to take or renew the lease at `now`: whether we hold it afterwards. API errors count as
    /// not holding it (a leader keeps leading until its renew deadline passes, see [`Elector::check`]).
    pub async fn try_once(&mut self, now: SystemTime) -> bool {
        match self.attempt(now).await {
            Ok(true) => {
                self.renewed = Some(now);
                true
            }
            Ok(false) => {
                self.renewed = None;
                false
            }
            Err(e) => {
                tracing::warn!(lease = %self.election.name, error = %e, "lease update failed");
                self.leading()
            }
        }
    }

    /// Err once a leader has gone longer than the renew deadline without renewing, at `now`.
    pub fn check(&self, now: SystemTime) -> Result<(), LeaderError> {
        let since = |at: SystemTime| now.duration_since(at).unwrap_or(Duration::ZERO);
        match self.renewed {
            Some(at) if since(at) > self.election.renew_deadline => Err(LeaderError::Lost(
                self.election.name.clone(),
                format!(
                    "not renewed for {}",
                    humantime::format_duration(self.election.renew_deadline)
                ),
            )),
            _ => Ok(()),
        }
    }

    async fn attempt(&self, now: SystemTime) -> Result<bool, kube::Error> {
        let e = &self.election;
        let ours = |transitions: i32, acquired: Option<MicroTime>| LeaseSpec {
            holder_identity: Some(e.identity.clone()),
            lease_duration_seconds: Some(i32::try_from(e.lease_duration.as_secs()).unwrap_or(15)),
            acquire_time: acquired.or_else(|| micro(now)),
            renew_time: micro(now),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        };
        let current = match self.api.get_opt(&e.name).await? {
            Some(lease) => lease,
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(e.name.clone()),
                        namespace: Some(e.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(ours(0, None)),
                };
                return match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    // Someone created it first.
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(other) => Err(other),
                };
            }
        };
        let spec = current.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let mine = holder == e.identity;
        let duration = Duration::from_secs(
            u64::try_from(spec.lease_duration_seconds.unwrap_or(15)).unwrap_or(15),
        );
        let expired = spec
            .renew_time
            .as_ref()
            .is_none_or(|t| system(t) + duration < now);
        if !mine && !holder.is_empty() && !expired {
            return Ok(false);
        }
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!mine);
        let acquired = if mine {
            spec.acquire_time.clone()
        } else {
            None
        };
        let lease = Lease {
            metadata: current.metadata.clone(),
            spec: Some(ours(transitions, acquired)),
        };
        // The resourceVersion read travels with the write: a concurrent writer makes it fail with 409.
        match self
            .api
            .replace(&e.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(other) => Err(other),
        }
    }
}
