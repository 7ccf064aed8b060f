//! The backend over AWS: a cheap handle on the state, serving the node groups from the view and changing
//! them through their Auto Scaling groups.
//!
//! Refresh (at most every `refreshInterval`) lists the cluster's node groups, re-describes those whose EKS
//! description is older than `describeInterval`, reads their Auto Scaling groups in batches of 100 names
//! and asks EC2 about instance types it has not seen. Everything else answers from that view. Sizes change
//! only through the ASG (SetDesiredCapacity, TerminateInstanceInAutoScalingGroup), never through
//! UpdateNodegroupConfig; the view is updated when AWS accepts a change, and re-read when it refuses one.

use super::calls::{Calls, sdk_error};
use super::config::AwsConfig;
use super::discovery::Discovery;
use super::interruption::{Membership, Poller};
use super::state::AwsState;
use super::view::View;
use crate::cloud::backend::CloudError;
use crate::cloud::backend::CloudObserver;
use crate::cloud::backend::NodeGroupBackend;
use crate::cloud::fargate::FargateRates;
use crate::cloud::node_group::Instance;
use crate::cloud::node_group::InstanceState;
use crate::cloud::node_group::NodeGroupSpec;
use crate::model::FargateProfile;
use async_trait::async_trait;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// EKS managed node groups on AWS. A cheap handle: clones share one view, so work that must outlive an
/// RPC (a refresh or a read-back AWS is slow to answer) goes on in a task of its own.
#[derive(Clone)]
pub struct AwsBackend(Arc<AwsState>);

impl std::ops::Deref for AwsBackend {
    type Target = AwsState;

    fn deref(&self) -> &AwsState {
        &self.0
    }
}

impl AwsBackend {
    /// A backend for `config.cluster`, with clients from `sdk` (the SDK's own credential chain, region and
    /// `AWS_ENDPOINT_URL`). Call [`NodeGroupBackend::refresh`] before serving.
    pub fn new(
        config: AwsConfig,
        sdk: &aws_config::SdkConfig,
        metrics: Arc<dyn CloudObserver>,
    ) -> AwsBackend {
        let region = sdk.region().map(|r| r.to_string());
        AwsBackend::with_calls(config, Calls::new(sdk, metrics.clone()), region, metrics)
    }

    /// A backend over clients built elsewhere; `region` is the SDK's when the config names none.
    pub fn with_calls(
        config: AwsConfig,
        calls: Calls,
        region: Option<String>,
        metrics: Arc<dyn CloudObserver>,
    ) -> AwsBackend {
        let region = config.region.clone().or(region).unwrap_or_default();
        AwsBackend(AwsState::new(config, calls, region, metrics))
    }

    pub fn cluster(&self) -> &str {
        &self.config.cluster
    }

    /// Re-reads the groups in flux with one batched DescribeAutoScalingGroups, so that a launched instance
    /// has its node group within seconds instead of at the next full refresh, and a terminated one is gone.
    /// Returns how many were in flux.
    pub async fn settle(&self) -> Result<usize, CloudError> {
        let asgs: Vec<String> = {
            let view = self.read();
            let flux = view.groups.iter().filter(|g| g.in_flux() && !g.uncertain);
            flux.map(|g| g.asg.clone()).collect()
        };
        if asgs.is_empty() {
            return Ok(0);
        }
        let since = self.changes.load(Ordering::SeqCst);
        let mut found = Vec::new();
        // DescribeAutoScalingGroups takes at most 100 names.
        for names in asgs.chunks(100) {
            let request = self
                .calls
                .autoscaling
                .describe_auto_scaling_groups()
                .set_auto_scaling_group_names(Some(names.to_vec()));
            let output = self
                .calls
                .autoscaling("DescribeAutoScalingGroups", request.send())
                .await
                .map_err(|e| sdk_error("autoscaling:DescribeAutoScalingGroups", e))?;
            found.extend(output.auto_scaling_groups().iter().cloned());
        }
        {
            let mut view = self.write();
            for asg in &found {
                let name = asg.auto_scaling_group_name().unwrap_or_default();
                // A group changed while AWS was read keeps what we did: it is newer.
                if let Some(group) = view
                    .groups
                    .iter_mut()
                    .find(|g| g.asg == name && g.changed <= since)
                {
                    group.apply(asg);
                }
            }
            view.reindex();
        }
        self.forget_gone();
        self.check_increases().await;
        self.settled.send_modify(|n| *n += 1);
        Ok(asgs.len())
    }

    /// Changes each time a re-read of the groups in flux has been taken into the view.
    pub fn settles(&self) -> tokio::sync::watch::Receiver<u64> {
        self.settled.subscribe()
    }

    /// Settles the groups in flux every `fluxInterval` for as long as the backend is in use (the task holds
    /// it only weakly, and ends with it).
    pub fn watch_flux(&self) -> Option<tokio::task::JoinHandle<()>> {
        let interval = self.config.flux_interval;
        if interval.is_zero() {
            return None;
        }
        let backend = Arc::downgrade(&self.0);
        Some(tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let Some(state) = backend.upgrade() else {
                    return;
                };
                if let Err(error) = AwsBackend(state).settle().await {
                    tracing::warn!(%error, "re-reading the node groups in flux failed");
                }
            }
        }))
    }

    /// Reads the interruption queue the config names (`interruptionQueue`, `--interruption-queue`) for as
    /// long as the backend is in use, with an SQS client from `sdk`; `None` when it names none.
    pub fn watch_interruptions(
        &self,
        sdk: &aws_config::SdkConfig,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let queue = self.config.interruption_queue.clone()?;
        let members: std::sync::Weak<dyn Membership> = Arc::downgrade(&self.0) as _;
        let poller = Poller {
            client: aws_sdk_sqs::Client::new(sdk),
            queue,
            record: self.leaving.clone(),
            members,
            metrics: self.metrics.clone(),
        };
        Some(poller.spawn())
    }

    /// One refresh, if it is due. When another is under way, waits for it instead of starting a second.
    async fn refresh_now(&self) -> Result<(), CloudError> {
        let mut memory = match self.refresh.try_lock() {
            Ok(memory) => memory,
            Err(_) => {
                drop(self.refresh.lock().await);
                return Ok(());
            }
        };
        if memory
            .last
            .is_some_and(|at| at.elapsed() < self.config.refresh_interval)
        {
            return Ok(());
        }
        let started = Instant::now();
        let since = self.changes.load(Ordering::SeqCst);
        let result = self.discover(&mut memory).await;
        self.metrics.observe_refresh(started.elapsed());
        let Discovery {
            mut groups,
            skipped,
            fargate,
        } = result?;
        memory.last = Some(started);
        self.metrics.set_skipped(&skipped);
        {
            let mut view = self.write();
            // A group we changed while AWS was being read: what we did is newer than what was read.
            for group in &mut groups {
                if let Ok(live) = view.group(&group.spec.id)
                    && live.changed > since
                {
                    group.desired = live.desired;
                    group.instances = live.instances.clone();
                    group.failure = live.failure.clone();
                    group.changed = live.changed;
                    group.uncertain = live.uncertain;
                }
            }
            *view = View {
                groups,
                fargate,
                refreshed_at: Some(started),
                ..View::default()
            };
            view.reindex();
        }
        self.forget_gone();
        self.check_increases().await;
        Ok(())
    }
}

#[async_trait]
impl NodeGroupBackend for AwsBackend {
    fn name(&self) -> &'static str {
        "aws"
    }

    /// Waits for AWS at most `awsTimeout`: a slower refresh goes on in its own task and updates the view
    /// when it is done, while this one answers from the cache (cluster-autoscaler aborts its loop when
    /// Refresh fails, and it would fail on its 5 s deadline).
    async fn refresh(&self) -> Result<(), CloudError> {
        // cluster-autoscaler calls Refresh every loop; most calls fall inside refreshInterval and need no task.
        if self
            .read()
            .refreshed_at
            .is_some_and(|at| at.elapsed() < self.config.refresh_interval)
        {
            return Ok(());
        }
        let this = self.clone();
        let mut task = tokio::spawn(async move { this.refresh_now().await });
        match tokio::time::timeout(self.config.aws_timeout, &mut task).await {
            Ok(done) => done.map_err(|e| CloudError::Internal(format!("refresh task: {e}")))?,
            Err(_) => {
                let age = self.cache_age();
                tokio::spawn(async move {
                    if let Ok(Err(error)) = task.await {
                        tracing::warn!(%error, "background refresh failed");
                    }
                });
                // A cache AWS has not confirmed for too long is no ground for decisions: an error makes
                // cluster-autoscaler skip its loop instead of acting on it.
                if age.is_none_or(|age| age > self.config.max_cache_age) {
                    return Err(CloudError::Unavailable(format!(
                        "AWS has not answered a refresh within {:?}, and the last complete one is {} old \
                         (maxCacheAge {:?}); a refresh goes on in the background",
                        self.config.aws_timeout,
                        age.map_or("never done".into(), |a| format!("{:.0?}", a)),
                        self.config.max_cache_age
                    )));
                }
                tracing::warn!(
                    cache_age = ?age,
                    "AWS is slow: refresh goes on in the background; answering from the cache"
                );
                Ok(())
            }
        }
    }

    fn node_groups(&self) -> Vec<Arc<NodeGroupSpec>> {
        self.read().groups.iter().map(|g| g.spec.clone()).collect()
    }

    fn node_group(&self, id: &str) -> Option<Arc<NodeGroupSpec>> {
        self.read().group(id).ok().map(|g| g.spec.clone())
    }

    fn node_group_of(&self, instance_id: &str) -> Option<String> {
        let view = self.read();
        if let Some(&i) = view.index.get(instance_id) {
            return Some(view.groups[i].spec.id.clone());
        }
        // `aws:///<zone>/i-placeholder-<asg>-<n>`, for as long as the ASG is that short.
        let (asg, _) = instance_id
            .rsplit_once('/')?
            .1
            .strip_prefix("i-placeholder-")?
            .rsplit_once('-')?;
        let group = view.groups.iter().find(|g| g.asg == asg)?;
        group
            .is_placeholder(instance_id)
            .then(|| group.spec.id.clone())
    }

    fn target_size(&self, id: &str) -> Result<i32, CloudError> {
        Ok(self.read().group(id)?.desired)
    }

    fn instances(&self, id: &str) -> Result<Vec<Instance>, CloudError> {
        let view = self.read();
        let group = view.group(id)?;
        let real = group.instances.iter().map(|i| Instance {
            id: i.provider_id.clone(),
            state: i.state,
            placeholder: false,
            error: None,
        });
        let placeholders = (0..group.placeholders()).map(|n| Instance {
            id: group.placeholder_id(n),
            state: InstanceState::Creating,
            placeholder: true,
            error: group.failure.clone(),
        });
        Ok(real.chain(placeholders).collect())
    }

    async fn set_target_size(&self, id: &str, target: i32) -> Result<(), CloudError> {
        self.settled(id)?;
        let asg = self.read().group(id)?.asg.clone();
        self.set_desired(id, &asg, target, self.deadline()).await
    }

    async fn atomic_increase(&self, id: &str, target: i32) -> Result<(), CloudError> {
        self.increase_atomically(id, target).await
    }

    async fn delete_instances(&self, id: &str, instance_ids: &[String]) -> Result<(), CloudError> {
        if self.cancels_increase(id, instance_ids).await? {
            return Ok(());
        }
        self.settled(id)?;
        let deadline = self.deadline();
        let (asg, real, placeholders) = {
            let view = self.read();
            let group = view.group(id)?;
            let mut real = Vec::new();
            let mut placeholders = 0usize;
            for wanted in instance_ids {
                if let Some(i) = group.instances.iter().find(|i| &i.provider_id == wanted) {
                    real.push(i.instance_id.clone());
                } else if group.is_placeholder(wanted) {
                    placeholders += 1;
                } else {
                    // Gone since the last read (terminated outside ekscale): lowering the desired capacity
                    // for it would make the ASG terminate an instance of its own choosing.
                    return Err(CloudError::NotFound(format!(
                        "instance {wanted} is no longer in node group {id} (Auto Scaling group {}); \
                         nothing was deleted",
                        group.asg
                    )));
                }
            }
            (group.asg.clone(), real, placeholders)
        };
        if placeholders > 0 {
            // A placeholder may have launched since the last read: then cancelling it would terminate a real
            // instance the ASG picks. Read the ASG again and cancel only what is still not there.
            self.reread(id).await?;
            let left = self.read().group(id)?.placeholders();
            if left < placeholders {
                return Err(CloudError::FailedPrecondition(format!(
                    "node group {id}: {placeholders} placeholder(s) to cancel, but only {left} not launched \
                     yet (Auto Scaling group {asg} read again); nothing was deleted: list the node group's \
                     nodes again and delete the instances by their ids"
                )));
            }
        }
        self.terminate(id, &real, deadline).await?;
        if placeholders > 0 {
            // Cancelling placeholders = asking for no more than the instances that exist.
            let cancelled = i32::try_from(placeholders).unwrap_or(i32::MAX);
            let desired = self.read().group(id)?.desired - cancelled;
            self.set_desired(id, &asg, desired, deadline).await?;
        }
        Ok(())
    }

    fn fargate_profiles(&self) -> Vec<FargateProfile> {
        self.read().fargate.clone()
    }

    fn fargate_rates(&self) -> FargateRates {
        self.config.fargate_rates(&self.region)
    }

    fn cache_age(&self) -> Option<Duration> {
        self.read().refreshed_at.map(|at| at.elapsed())
    }

    /// What the interruption queue said, as recorded (a reboot or maintenance that has ended by now
    /// forgotten): no AWS call.
    fn leaving_instances(&self) -> Vec<crate::model::LeavingInstance> {
        self.leaving.list(std::time::SystemTime::now())
    }

    fn price_of_instance_type(&self, instance_type: &str) -> Option<f64> {
        self.price_of(instance_type)
    }
}
