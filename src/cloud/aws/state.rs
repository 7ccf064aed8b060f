//! What the backend keeps: its clients and configuration, the view of the cloud, what refreshes remember, the
//! all-or-nothing increases in flight, and the calls that change an Auto Scaling group and keep the view in
//! step with them.

use super::calls::{Calls, sdk_error};
use super::config::AwsConfig;
use super::instance_types::InstanceTypes;
use super::interruption::{Membership, Record};
use super::launch_templates::{Images, Reservations};
use super::view::{AsgInstance, ServedGroup, View};
use crate::cloud::backend::CloudError;
use crate::cloud::backend::CloudObserver;
use crate::cloud::node_group::InstanceState;
use crate::model::FargateProfile;
use aws_sdk_autoscaling::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_eks::types::Nodegroup;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Instant, SystemTime};

/// The backend's state, which every handle on it shares.
pub struct AwsState {
    /// A weak handle to itself, for work that must outlive the call that starts it.
    pub(super) me: Weak<AwsState>,
    pub(super) calls: Calls,
    pub(super) config: AwsConfig,
    pub(super) region: String,
    pub(super) metrics: Arc<dyn CloudObserver>,
    pub(super) view: RwLock<View>,
    pub(super) refresh: tokio::sync::Mutex<Memory>,
    pub(super) instance_types: InstanceTypes,
    /// When we last changed each ASG's desired capacity: scaling failures older than that are history.
    pub(super) last_scaled: Mutex<HashMap<String, SystemTime>>,
    /// Counts our changes, so that a refresh that read AWS before a change does not undo it in the view.
    pub(super) changes: AtomicU64,
    /// Counts the re-reads of groups in flux that took what AWS answered.
    pub(super) settled: tokio::sync::watch::Sender<u64>,
    /// All-or-nothing increases not yet launched whole, by node group.
    pub(super) atomic: Increases,
    /// One check of those increases at a time (each may set one back).
    pub(super) atomic_checks: tokio::sync::Mutex<()>,
    /// Counts the checks of those increases.
    pub(super) atomic_ended: tokio::sync::watch::Sender<u64>,
    /// The instances the interruption queue said are leaving.
    pub(super) leaving: Arc<Record>,
}

/// What refreshes remember between runs.
#[derive(Default)]
pub(super) struct Memory {
    pub(super) last: Option<Instant>,
    /// EKS descriptions by node group name, with when they were read.
    pub(super) described: HashMap<String, (Instant, Nodegroup)>,
    /// Fargate profiles by name, with when they were read.
    pub(super) profiles: HashMap<String, (Instant, FargateProfile)>,
    /// The AMI of each launch template version the groups launch.
    pub(super) images: Images,
    /// The capacity reservations those versions target.
    pub(super) reservations: Reservations,
}

/// One all-or-nothing increase the ASG has not yet launched whole.
pub(super) struct Increase {
    /// The group's instances (providerIDs) before the increase.
    pub(super) before: HashSet<String>,
    pub(super) desired_before: i32,
    pub(super) delta: usize,
    pub(super) deadline: Instant,
}

/// The increases in flight, by node group id.
pub(super) type Increases = std::sync::Mutex<HashMap<String, Increase>>;

impl Increase {
    /// The group's instances launched since the increase: not one of its earlier ones, not terminating.
    pub(super) fn launched<'a>(
        &'a self,
        group: &'a ServedGroup,
    ) -> impl Iterator<Item = &'a AsgInstance> + 'a {
        group
            .instances
            .iter()
            .filter(|i| i.state != InstanceState::Deleting)
            .filter(|i| !self.before.contains(&i.provider_id))
    }

    /// Whether every instance it added is in service.
    pub(super) fn whole(&self, group: &ServedGroup) -> bool {
        let in_service = self
            .launched(group)
            .filter(|i| i.state == InstanceState::Running);
        in_service.count() >= self.delta
    }
}

impl AwsState {
    /// Hourly price of an instance type: the configuration's override, else the built-in list's.
    pub(super) fn price_of(&self, instance_type: &str) -> Option<f64> {
        self.config.price(instance_type).or_else(|| {
            crate::cloud::instance_types::lookup(instance_type).map(|i| i.price_per_hour)
        })
    }

    /// The state of a backend for `config.cluster`, over `calls`, in `region`.
    pub(super) fn new(
        config: AwsConfig,
        calls: Calls,
        region: String,
        metrics: Arc<dyn CloudObserver>,
    ) -> Arc<AwsState> {
        Arc::new_cyclic(|me| AwsState {
            me: me.clone(),
            calls,
            config,
            region,
            metrics,
            view: RwLock::new(View::default()),
            refresh: tokio::sync::Mutex::new(Memory::default()),
            instance_types: InstanceTypes::default(),
            last_scaled: Mutex::new(HashMap::new()),
            changes: AtomicU64::new(0),
            settled: tokio::sync::watch::Sender::new(0),
            atomic: Default::default(),
            atomic_checks: tokio::sync::Mutex::new(()),
            atomic_ended: tokio::sync::watch::Sender::new(0),
            leaving: Arc::default(),
        })
    }

    /// Forgets the leaving instances no longer in their node group (terminated and gone from the ASG, or
    /// the group no longer served). Called once the view has taken a new read of AWS.
    pub(super) fn forget_gone(&self) {
        let view = self.read();
        self.leaving.retain(|leaving| {
            let group = view
                .index
                .get(&leaving.id)
                .map(|&g| &view.groups[g].spec.id);
            group == Some(&leaving.node_group)
        });
    }

    /// When an RPC that starts now must have its answer from AWS.
    pub(super) fn deadline(&self) -> tokio::time::Instant {
        tokio::time::Instant::now() + self.config.aws_timeout
    }

    /// Marks a group as changed now: a refresh already under way keeps this state instead of its own.
    pub(super) fn touch(&self, group: &mut ServedGroup) {
        group.changed = self.changes.fetch_add(1, Ordering::SeqCst) + 1;
    }

    pub(super) fn read(&self) -> std::sync::RwLockReadGuard<'_, View> {
        self.view
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn write(&self) -> std::sync::RwLockWriteGuard<'_, View> {
        self.view
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Re-reads one group's ASG after AWS refused a change, so the view shows what AWS has, not a guess.
    pub(super) async fn reload(&self, id: &str) {
        if let Err(error) = self.reread(id).await {
            tracing::warn!(node_group = id, %error, "re-reading the ASG failed");
        }
    }

    /// Reads one group's ASG again, now, into the view.
    pub(super) async fn reread(&self, id: &str) -> Result<(), CloudError> {
        let asg = self.read().group(id)?.asg.clone();
        let request = self
            .calls
            .autoscaling
            .describe_auto_scaling_groups()
            .auto_scaling_group_names(&asg);
        let output = self
            .calls
            .autoscaling("DescribeAutoScalingGroups", request.send())
            .await
            .map_err(|e| sdk_error("autoscaling:DescribeAutoScalingGroups", e))?;
        let Some(found) = output.auto_scaling_groups().first() else {
            return Err(CloudError::NotFound(format!(
                "node group {id}: its Auto Scaling group {asg} no longer exists"
            )));
        };
        let mut view = self.write();
        let group = view.group_mut(id)?;
        group.apply(found);
        group.uncertain = false;
        self.touch(group);
        view.reindex();
        Ok(())
    }

    /// Runs one size change against the group's ASG, answering by `deadline`. When AWS refuses it, the
    /// group is re-read, so the view shows what AWS has rather than a guess. When AWS does not answer in
    /// time, nobody knows whether it happened: the group is marked uncertain and read back in the
    /// background, and refuses other changes until then.
    pub(super) async fn change_asg<T, E, R>(
        &self,
        id: &str,
        operation: &'static str,
        deadline: tokio::time::Instant,
        call: impl std::future::Future<Output = Result<T, SdkError<E, R>>>,
    ) -> Result<T, CloudError>
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug,
    {
        let answered =
            tokio::time::timeout_at(deadline, self.calls.autoscaling(operation, call)).await;
        match answered {
            Ok(Ok(output)) => Ok(output),
            Ok(Err(error)) => {
                let error = sdk_error(&format!("autoscaling:{operation}"), error);
                self.reload(id).await;
                Err(error)
            }
            Err(_) => {
                {
                    let mut view = self.write();
                    let group = view.group_mut(id)?;
                    group.uncertain = true;
                    self.touch(group);
                }
                let this = self.me.clone();
                let group = id.to_string();
                tokio::spawn(async move {
                    if let Some(this) = this.upgrade() {
                        this.reload(&group).await
                    }
                });
                Err(CloudError::Unavailable(format!(
                    "autoscaling:{operation} did not answer within {:?}; whether it took effect is being \
                     read back from the Auto Scaling group, and node group {id} takes no other change until then",
                    self.config.aws_timeout
                )))
            }
        }
    }

    /// Terminates these instances (EC2 ids) of the group, each with the desired capacity decremented.
    pub(super) async fn terminate(
        &self,
        id: &str,
        instance_ids: &[String],
        deadline: tokio::time::Instant,
    ) -> Result<(), CloudError> {
        for (done, instance_id) in instance_ids.iter().enumerate() {
            let request = self
                .calls
                .autoscaling
                .terminate_instance_in_auto_scaling_group()
                .instance_id(instance_id)
                .should_decrement_desired_capacity(true);
            if let Err(error) = self
                .change_asg(
                    id,
                    "TerminateInstanceInAutoScalingGroup",
                    deadline,
                    request.send(),
                )
                .await
            {
                let context = format!(
                    "terminated {done} of {} instance(s) of node group {id}, then",
                    instance_ids.len()
                );
                return Err(error.context(&context));
            }
            let mut view = self.write();
            let group = view.group_mut(id)?;
            self.touch(group);
            if let Some(instance) = group
                .instances
                .iter_mut()
                .find(|i| &i.instance_id == instance_id)
            {
                instance.state = InstanceState::Deleting;
            }
            group.desired -= 1;
        }
        Ok(())
    }

    pub(super) async fn set_desired(
        &self,
        id: &str,
        asg: &str,
        desired: i32,
        deadline: tokio::time::Instant,
    ) -> Result<(), CloudError> {
        let request = self
            .calls
            .autoscaling
            .set_desired_capacity()
            .auto_scaling_group_name(asg)
            .desired_capacity(desired)
            .honor_cooldown(false);
        self.change_asg(id, "SetDesiredCapacity", deadline, request.send())
            .await?;
        self.last_scaled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(asg.to_string(), SystemTime::now());
        let mut view = self.write();
        let group = view.group_mut(id)?;
        self.touch(group);
        group.desired = desired;
        if group.placeholders() == 0 {
            group.failure = None;
        }
        Ok(())
    }
}

/// The queue names EC2 instance ids: each is looked up in the served groups' instances. Messages are rare
/// (a few in an instance's life), so a scan of the view costs less than one more index rebuilt at every
/// re-read.
impl Membership for AwsState {
    fn locate(&self, instance_id: &str) -> Option<(String, String)> {
        let view = self.read();
        view.groups.iter().find_map(|group| {
            let instance = group
                .instances
                .iter()
                .find(|i| i.instance_id == instance_id)?;
            Some((instance.provider_id.clone(), group.spec.id.clone()))
        })
    }
}
