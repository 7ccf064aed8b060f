//! A pod as decisions see it: what it needs and where it may run.

use super::dra::ClaimNeeds;
use super::dra::DraKey;
use super::dra::PodDra;
use super::dra::{ClaimSource, Name, PodClaim};
use super::fast_map::FastMap;
use super::labels::Labels;
use super::resources::Resources;
use super::selector::{LabelSelector, NodeSelector};
use super::taint::Toleration;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The scheduler name of pods EKS runs on Fargate.
pub const FARGATE_SCHEDULER: &str = "fargate-scheduler";

/// Fields in the order written (`repr(C)`), those every loop reads of every pod first: a loop passes over
/// tens of thousands of pods, each a cache miss a line, and with the compiler's order sorting a pending pod
/// read six of its seven lines. Now sorting reads the first, third and fourth; grouping the first two.
#[derive(Clone, Debug, PartialEq)]
#[repr(C)]
pub struct Pod {
    pub phase: Phase,
    /// PodScheduled=False with reason Unschedulable: the scheduler found no node for it.
    pub unschedulable: bool,
    pub priority: Option<i32>,
    /// Where it may run; equivalent pods share one.
    pub scheduling: Arc<Scheduling>,
    /// A boxed `str` (16 bytes, a `String` takes 24), so that `dra` fits in this first cache line too.
    pub node_name: Option<Box<str>>,
    /// Its claims and what they ask of a node; `None` for a pod that claims nothing. In the first line,
    /// which every pass reads: the equivalence key reads it of every pod.
    pub dra: Option<Box<PodDra>>,
    /// Pods read together share one allocation per namespace ([`Alike`]): the loop compares namespaces
    /// of tens of thousands of pods, and equal pointers answer without reading the text.
    pub namespace: Arc<str>,
    /// See [`super::resources::pod_demand`].
    pub demand: Resources,
    /// Extended resources it requests besides GPUs (which are in `demand`), by name.
    pub extended: BTreeMap<String, u64>,
    /// Its deletionTimestamp: it is terminating.
    pub deleted: Option<std::time::SystemTime>,
    pub nominated_node: Option<String>,
    pub scheduler_name: String,
    /// Shared by the pods of one workload ([`Alike`]): a million pods hold a few thousand owners, and three
    /// strings of their own took over a tenth of a pod's memory.
    pub controller: Option<Arc<Controller>>,
    /// Its creationTimestamp.
    pub created: Option<std::time::SystemTime>,
    /// `cluster-autoscaler.kubernetes.io/pod-scale-up-delay`: wait at least this long before adding a node
    /// for it.
    pub scale_up_delay: Option<std::time::Duration>,
    pub name: String,
    pub labels: Labels,
    /// The pod as kubectl prints it, kept for pending pods only (to ask the provider about Fargate).
    pub json: Option<String>,
    /// What removing its node must respect.
    pub disruption: Disruption,
    /// The ProvisioningRequest (in its namespace) whose room it takes (`autoscaling.x-k8s.io/
    /// consume-provisioning-request`): it is not scaled up for on its own.
    pub consumes: Option<String>,
}

/// What cluster-autoscaler's drainability rules read of a pod besides its owner and namespace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Disruption {
    /// A static pod's mirror (`kubernetes.io/config.mirror`): the kubelet runs it, nobody moves it.
    pub mirror: bool,
    /// `cluster-autoscaler.kubernetes.io/safe-to-evict`.
    pub safe_to_evict: SafeToEvict,
    /// Volumes that live on the node's disk (hostPath, emptyDir not in memory) and are not listed in
    /// `cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes`.
    pub local_volumes: Vec<String>,
    /// `terminationGracePeriodSeconds` (30 when unset).
    pub grace_period_seconds: u64,
    /// `karpenter.sh/do-not-disrupt: "true"`: consolidation never moves it (scale-down's rules do not read
    /// it, as upstream's do not).
    pub do_not_disrupt: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SafeToEvict {
    #[default]
    Unset,
    /// `"true"`: evict it whatever the other rules say.
    Yes,
    /// `"false"`: never evict it; its node stays.
    No,
    /// `"on-completion"`: keep its node until it finishes.
    OnCompletion,
}

/// Controllers that recreate an evicted pod (the kinds upstream trusts when it skips custom controllers).
pub const REPLICATING_KINDS: [&str; 4] =
    ["ReplicationController", "ReplicaSet", "Job", "StatefulSet"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Pending,
    Running,
    /// Succeeded or Failed: it holds nothing on its node.
    Terminal,
}

/// The owner reference marked `controller: true`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Controller {
    pub kind: String,
    pub name: String,
    pub uid: String,
}

/// A pod's scheduling constraints (the required ones: preferences never decide a node group).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Scheduling {
    pub node_selector: Labels,
    pub node_affinity: Option<NodeSelector>,
    pub tolerations: Vec<Toleration>,
    pub host_ports: Vec<HostPort>,
    pub affinity: Vec<PodAffinityTerm>,
    pub anti_affinity: Vec<PodAffinityTerm>,
    /// `whenUnsatisfiable: DoNotSchedule` only; `ScheduleAnyway` is a preference.
    pub spread: Vec<SpreadConstraint>,
}

impl Scheduling {
    /// Whether where other pods sit matters to this pod (the expensive predicates).
    pub fn has_pod_constraints(&self) -> bool {
        !self.affinity.is_empty()
            || !self.anti_affinity.is_empty()
            || !self.spread.is_empty()
            || !self.host_ports.is_empty()
    }

    /// Whether it selects pods by their labels (pod affinity, anti-affinity, topology spread).
    pub fn selects_pods(&self) -> bool {
        !self.affinity.is_empty() || !self.anti_affinity.is_empty() || !self.spread.is_empty()
    }

    /// Whether a nodeSelector or required node affinity narrows the nodes it may use.
    pub fn constrains_nodes(&self) -> bool {
        !self.node_selector.is_empty() || self.node_affinity.is_some()
    }

    /// nodeSelector and required node affinity, both of which must hold, on the node named `name`.
    pub fn node_matches(&self, name: &str, labels: &Labels) -> bool {
        self.node_selector
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self
                .node_affinity
                .as_ref()
                .is_none_or(|a| a.matches(name, labels))
    }

    /// What a DaemonSet pod asks of any node: the same without the node its controller pinned it to.
    pub fn for_any_node(&self) -> Scheduling {
        Scheduling {
            node_affinity: self
                .node_affinity
                .as_ref()
                .and_then(|a| a.without_node_names()),
            ..self.clone()
        }
    }
}

/// A host port a container binds; two pods conflict on a node when protocol and port are equal and their IPs
/// overlap (an empty or 0.0.0.0 IP overlaps every IP).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostPort {
    pub protocol: String,
    pub port: i32,
    pub ip: String,
}

impl HostPort {
    pub fn conflicts(&self, other: &HostPort) -> bool {
        let wildcard = |ip: &str| ip.is_empty() || ip == "0.0.0.0";
        self.protocol == other.protocol
            && self.port == other.port
            && (wildcard(&self.ip) || wildcard(&other.ip) || self.ip == other.ip)
    }
}

/// Required pod (anti-)affinity: pods matching `selector` in `namespaces` within the same `topology_key`
/// domain (hostname, zone, ...).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PodAffinityTerm {
    pub selector: LabelSelector,
    /// `None`: every namespace (an empty namespaceSelector); otherwise these (the pod's own by default).
    pub namespaces: Option<Vec<String>>,
    pub topology_key: String,
}

impl PodAffinityTerm {
    pub fn matches(&self, namespace: &str, labels: &Labels) -> bool {
        self.namespaces
            .as_ref()
            .is_none_or(|list| list.iter().any(|n| n == namespace))
            && self.selector.matches(labels)
    }
}

/// A `DoNotSchedule` topology spread constraint (matchLabelKeys already folded into the selector).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SpreadConstraint {
    pub max_skew: u32,
    pub topology_key: String,
    pub selector: LabelSelector,
    /// With fewer eligible domains than this, the global minimum is taken as 0 (1 when unset).
    pub min_domains: u32,
    /// `nodeAffinityPolicy` is `Honor` (the default): nodes the pod's node selector and affinity refuse
    /// are not domains.
    pub honor_node_affinity: bool,
    /// `nodeTaintsPolicy` is `Honor` (the default is `Ignore`): nodes with taints the pod does not
    /// tolerate are not domains.
    pub honor_node_taints: bool,
}

impl SpreadConstraint {
    /// A constraint with kube-scheduler's defaults: `minDomains` 1, node affinity honoured, taints ignored.
    pub fn new(max_skew: u32, topology_key: &str, selector: LabelSelector) -> SpreadConstraint {
        SpreadConstraint {
            max_skew,
            topology_key: topology_key.into(),
            selector,
            min_domains: 1,
            honor_node_affinity: true,
            honor_node_taints: false,
        }
    }
}

impl Pod {
    /// A pending pod with this demand and nothing else: no labels, owner or constraints.
    pub fn pending(namespace: &str, name: &str, demand: Resources) -> Pod {
        Pod {
            namespace: namespace.into(),
            name: name.into(),
            labels: Labels::new(),
            demand,
            extended: BTreeMap::new(),
            priority: None,
            controller: None,
            scheduler_name: String::new(),
            node_name: None,
            nominated_node: None,
            phase: Phase::Pending,
            unschedulable: true,
            deleted: None,
            created: None,
            scale_up_delay: None,
            scheduling: Arc::default(),
            json: None,
            disruption: Disruption {
                grace_period_seconds: 30,
                ..Disruption::default()
            },
            consumes: None,
            dra: None,
        }
    }

    /// The ResourceClaims it names ([`PodDra::claims`]).
    pub fn claims(&self) -> &[PodClaim] {
        self.dra.as_deref().map_or(&[], |d| &d.claims)
    }

    /// What its claims ask of a node ([`PodDra::needs`]), once the loop found it.
    pub fn needs(&self) -> Option<&Arc<ClaimNeeds>> {
        self.dra.as_deref()?.needs.as_ref()
    }

    /// Its uid, kept for pods with claims only ([`PodDra::uid`]).
    pub fn uid(&self) -> Option<&Name> {
        self.dra.as_deref()?.uid.as_ref()
    }

    /// Its DRA parts to write, made empty where it had none.
    pub fn dra_mut(&mut self) -> &mut PodDra {
        self.dra.get_or_insert_default()
    }

    /// A copy of this pod that holds room for it (headroom's, a buffer's chunk, a ProvisioningRequest's pod):
    /// pending as if the scheduler had found no node for it, of the lowest priority, free to move.
    pub fn virtual_pending(&self, namespace: &str, name: String) -> Pod {
        let mut pod = self.clone();
        pod.namespace = namespace.into();
        pod.name = name;
        pod.node_name = None;
        pod.nominated_node = None;
        pod.phase = Phase::Pending;
        // As if the scheduler had found no node for it: it is what the loop makes room for.
        pod.unschedulable = true;
        pod.deleted = None;
        pod.priority = Some(-1);
        pod.disruption.safe_to_evict = SafeToEvict::Yes;
        pod.json = None;
        pod.consumes = None;
        // A pod of its own gets a claim of its own from each template (shared claims stay shared), and
        // no claim is reserved for it yet.
        if let Some(dra) = &mut pod.dra {
            for claim in &mut dra.claims {
                if let ClaimSource::Template { made, .. } = &mut claim.source {
                    *made = None;
                }
            }
            dra.uid = None;
        }
        pod
    }

    /// `namespace/name`, how pods are written everywhere.
    pub fn key(&self) -> String {
        // Built by hand: the status names every pod, and `format!` costs several times as much.
        let mut key = String::with_capacity(self.namespace.len() + 1 + self.name.len());
        key.push_str(&self.namespace);
        key.push('/');
        key.push_str(&self.name);
        key
    }

    /// A priority below the cutoff makes a pod expendable: never a reason to add a node, and its room free.
    pub fn expendable(&self, cutoff: i32) -> bool {
        self.priority.is_some_and(|p| p < cutoff)
    }

    /// Whether it asks for GPUs (upstream waits longer to batch those: device plugins are slow).
    pub fn wants_gpu(&self) -> bool {
        self.demand.gpus > 0
    }

    pub fn daemonset(&self) -> bool {
        self.controller
            .as_ref()
            .is_some_and(|c| c.kind == "DaemonSet")
    }

    /// Whether its controller is one that recreates it elsewhere when it is evicted.
    pub fn replicated(&self) -> bool {
        self.controller
            .as_ref()
            .is_some_and(|c| REPLICATING_KINDS.contains(&c.kind.as_str()))
    }

    /// Whether it occupies room on its node.
    pub fn holds_room(&self) -> bool {
        self.node_name.is_some() && self.phase != Phase::Terminal
    }

    /// What makes two pods interchangeable to the estimator: everything the predicates and the packing read,
    /// of its labels those `projection` keeps; `ids` names its scheduling constraints.
    pub fn equivalence_key<'a>(
        &'a self,
        projection: &'a LabelProjection,
        ids: &mut SchedulingIds<'a>,
    ) -> EquivalenceKey<'a> {
        EquivalenceKey {
            namespace: &self.namespace,
            labels: projection.project(&self.namespace, &self.labels),
            demand: self.demand,
            extended: &self.extended,
            priority: self.priority,
            scheduling: ids.id(&self.scheduling),
            dra: DraKey::of(self.dra.as_deref()),
        }
    }
}

#[derive(Clone, Eq, Hash)]
pub struct EquivalenceKey<'a> {
    /// `Arc`'s equality tries the pointer first: shared namespaces compare without a cache miss.
    namespace: &'a Arc<str>,
    labels: Projected<'a>,
    demand: Resources,
    extended: &'a BTreeMap<String, u64>,
    priority: Option<i32>,
    scheduling: usize,
    /// Its claims, and the extended resources devices may serve, taken out of `demand` and `extended`.
    dra: DraKey<'a>,
}

impl PartialEq for EquivalenceKey<'_> {
    /// Every field, the numbers first. Always inlined: grouping compares a key per pod with the one before
    /// it, and once the DRA part joined the key the compiler stopped inlining the derived comparison (a call
    /// a pod: 5% of the loop on the 51,000 pods of upstream's benchmark).
    #[inline(always)]
    fn eq(&self, other: &Self) -> bool {
        self.scheduling == other.scheduling
            && self.priority == other.priority
            && self.demand == other.demand
            && self.namespace == other.namespace
            && self.dra == other.dra
            && self.labels == other.labels
            && same_extended(self.extended, other.extended)
    }
}

/// Whether two pods request the same extended resources: most request none, and two empty maps are told
/// equal without walking them (a `BTreeMap`'s comparison sets up two iterators first, a tenth of grouping).
#[inline(always)]
fn same_extended(a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>) -> bool {
    (a.is_empty() && b.is_empty()) || a == b
}

/// Numbers for scheduling constraints, equal numbers for equal constraints. Pods read together share one
/// `Arc<Scheduling>` per distinct value ([`Alike`]), so a pod costs a pointer lookup and each
/// distinct value one deep comparison, however many pods there are.
#[derive(Default)]
pub struct SchedulingIds<'a> {
    /// The last pointer asked about and its number: pods of one workload come in a row.
    last: Option<(*const Scheduling, usize)>,
    by_pointer: FastMap<*const Scheduling, usize>,
    by_value: FastMap<&'a Scheduling, usize>,
}

impl<'a> SchedulingIds<'a> {
    pub fn id(&mut self, scheduling: &'a Arc<Scheduling>) -> usize {
        let pointer = Arc::as_ptr(scheduling);
        if let Some((last, id)) = self.last
            && last == pointer
        {
            return id;
        }
        let by_value = &mut self.by_value;
        let id = *self.by_pointer.entry(pointer).or_insert_with(|| {
            let next = by_value.len();
            *by_value.entry(&**scheduling).or_insert(next)
        });
        self.last = Some((pointer, id));
        id
    }
}

/// Makes pods with equal scheduling constraints share one `Arc` of them, pods of one namespace one `Arc`
/// of its name, and pods of one owner one `Arc` of their controller: done where pods are read, so that the
/// loop compares the first two by pointer, and a million pods hold each owner once. Kept by a source that
/// reads pods one at a time as they change (a watch), so that a pod read today shares with one read
/// yesterday.
#[derive(Debug, Default)]
pub struct Alike {
    constraints: std::collections::HashSet<Arc<Scheduling>>,
    namespaces: std::collections::HashSet<Arc<str>>,
    controllers: std::collections::HashSet<Arc<Controller>>,
    /// How many values were kept after the last [`Alike::forget_unused`]: past twice that, it runs again.
    kept: usize,
}

impl Alike {
    /// `pod`'s constraints, namespace and controller become the shared ones equal to them.
    pub fn share(&mut self, pod: &mut Pod) {
        share(&mut self.constraints, &mut pod.scheduling);
        share(&mut self.namespaces, &mut pod.namespace);
        if let Some(controller) = &mut pod.controller {
            share(&mut self.controllers, controller);
        }
        if self.len() > 2 * self.kept.max(1024) {
            self.forget_unused();
        }
    }

    /// Makes `pods`, read in parts that each shared their pods' values ([`Alike::share`]), share across the
    /// parts: each part's value is looked up once, by address, instead of hashing every pod's constraints
    /// again. A pod held elsewhere already (not only in `pods`) keeps its own values.
    pub fn join(&mut self, pods: &mut [Arc<Pod>]) {
        let mut constraints = Parts::default();
        let mut namespaces = Parts::default();
        let mut controllers = Parts::default();
        for pod in pods.iter_mut().filter_map(Arc::get_mut) {
            constraints.share(&mut self.constraints, &mut pod.scheduling);
            namespaces.share(&mut self.namespaces, &mut pod.namespace);
            if let Some(controller) = &mut pod.controller {
                controllers.share(&mut self.controllers, controller);
            }
        }
    }

    /// Drops the values no pod holds any more (a workload's constraints after it is gone): a watch sees
    /// workloads come and go for months, and what it shares must not grow with them.
    fn forget_unused(&mut self) {
        self.constraints.retain(|c| Arc::strong_count(c) > 1);
        self.namespaces.retain(|n| Arc::strong_count(n) > 1);
        self.controllers.retain(|c| Arc::strong_count(c) > 1);
        self.kept = self.len();
    }

    fn len(&self) -> usize {
        self.constraints.len() + self.namespaces.len() + self.controllers.len()
    }
}

/// The values parts shared, by address: each kept alive (so that no other value takes its address), with the
/// shared value it became.
struct Parts<T: ?Sized>(std::collections::HashMap<*const T, (Arc<T>, Arc<T>)>);

impl<T: ?Sized> Default for Parts<T> {
    fn default() -> Self {
        Parts(std::collections::HashMap::new())
    }
}

impl<T: ?Sized + Eq + std::hash::Hash> Parts<T> {
    /// `value` becomes the shared value its part's value became, looked up in `seen` the first time.
    fn share(&mut self, seen: &mut std::collections::HashSet<Arc<T>>, value: &mut Arc<T>) {
        let (_, shared) = self.0.entry(Arc::as_ptr(value)).or_insert_with(|| {
            let part = value.clone();
            share(seen, value);
            (part, value.clone())
        });
        *value = shared.clone();
    }
}

/// `value` becomes the `Arc` in `seen` equal to it, or joins `seen`.
fn share<T: ?Sized + Eq + std::hash::Hash>(
    seen: &mut std::collections::HashSet<Arc<T>>,
    value: &mut Arc<T>,
) {
    match seen.get(value) {
        Some(shared) => *value = shared.clone(),
        None => {
            seen.insert(value.clone());
        }
    }
}

/// The label keys some selector in the cluster reads: pod affinity and anti-affinity terms and topology spread
/// selectors (matchLabelKeys folded in) of every pod, pending or running, and whatever else selects pods by
/// label (Fargate profiles, in the namespaces they take). A label outside them cannot change where a pod may
/// go or what it counts for, so pods that differ only there (an Indexed Job's completion index, a
/// StatefulSet's pod name, a label per pod) are one equivalence group.
#[derive(Clone, Debug, PartialEq)]
pub enum LabelProjection {
    /// Every label counts: for callers that do not know the cluster's selectors.
    All,
    /// Only these keys, sorted.
    Keys(Vec<String>),
    /// `keys` everywhere, and `wider` (sorted, `keys` among them) for pods in `namespaces`: what selects
    /// pods only in some namespaces (a Fargate profile) reads their labels there alone, so pods elsewhere
    /// cost no look at those labels.
    Scoped {
        keys: Vec<String>,
        wider: Vec<String>,
        namespaces: std::collections::BTreeSet<String>,
    },
}

/// A pod's labels as a [`LabelProjection`] keeps them.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Projected<'a> {
    All(&'a Labels),
    Keys(Vec<Option<&'a str>>),
}

impl LabelProjection {
    /// The keys the selectors of `pods` read, with `extra` keys.
    pub fn of<'a>(
        pods: impl IntoIterator<Item = &'a Pod>,
        extra: impl IntoIterator<Item = String>,
    ) -> LabelProjection {
        let mut keys: std::collections::BTreeSet<String> = extra.into_iter().collect();
        let mut seen: std::collections::HashSet<*const Scheduling> =
            std::collections::HashSet::new();
        for pod in pods {
            let s = &*pod.scheduling;
            if !s.selects_pods() || !seen.insert(s) {
                continue;
            }
            let selectors = s
                .affinity
                .iter()
                .chain(&s.anti_affinity)
                .map(|t| &t.selector)
                .chain(s.spread.iter().map(|c| &c.selector));
            for selector in selectors {
                keys.extend(selector.keys().map(str::to_string));
            }
        }
        LabelProjection::Keys(keys.into_iter().collect())
    }

    /// This projection, with `extra` keys counting for pods in `namespaces` too.
    pub fn scoped(
        self,
        extra: std::collections::BTreeSet<String>,
        namespaces: std::collections::BTreeSet<String>,
    ) -> LabelProjection {
        match self {
            LabelProjection::Keys(keys) if !namespaces.is_empty() && !extra.is_empty() => {
                let mut wider: std::collections::BTreeSet<String> = keys.iter().cloned().collect();
                wider.extend(extra);
                LabelProjection::Scoped {
                    keys,
                    wider: wider.into_iter().collect(),
                    namespaces,
                }
            }
            unchanged => unchanged,
        }
    }

    fn project<'a>(&'a self, namespace: &str, labels: &'a Labels) -> Projected<'a> {
        let keys = match self {
            LabelProjection::All => return Projected::All(labels),
            LabelProjection::Keys(keys) => keys,
            LabelProjection::Scoped {
                keys,
                wider,
                namespaces,
            } => match namespaces.contains(namespace) {
                true => wider,
                false => keys,
            },
        };
        match keys.is_empty() {
            true => Projected::Keys(Vec::new()),
            false => Projected::Keys(
                keys.iter()
                    .map(|k| labels.get(k).map(String::as_str))
                    .collect(),
            ),
        }
    }
}

#[cfg(test)]
mod tests;
