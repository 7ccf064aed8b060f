// SPDX-License-Identifier: Apache-2.0
//
// cluster-autoscaler's own RunOnce, once, over one of ekscale's snapshots and the simulated EKS scenario it
// was made on (issue 62's affinity surge: the files benches/surge.rs keeps with EKSCALE_BENCH_KEEP). This
// file is ekscale's; the packages it calls are cluster-autoscaler's (Apache-2.0, The Kubernetes Authors),
// built from a release's vendored tree by run.sh beside it, which also copies cluster-autoscaler's own
// main.go into the same package (its func main renamed caMain) so that the options come from
// cluster-autoscaler's own flags and their defaults (createAutoscalingOptions), and every flag it has can be
// given here.
//
// The autoscaler is wired as cluster-autoscaler's buildAutoscaler wires it (the default processors, the
// default pod list processor, the template node info provider and node group set processor its
// --cloud-provider picks, a DeltaClusterSnapshot, the scheduler-based predicate checker over the default
// profile, core.NewAutoscaler filling in the rest), with these in place of a cluster and a cloud, as
// cluster-autoscaler's own tests (core/static_autoscaler_test.go) put them:
//   - the test cloud provider (cloudprovider/test): one node group a scenario group, with its min and max
//     and the snapshot's nodes of that group (the eks.amazonaws.com/nodegroup label) registered in it; its
//     template NodeInfo built from the group's instance type, zone, labels, taints and allocatable;
//   - test listers (utils/kubernetes: NewTestNodeLister, NewTestPodLister, ...) over the snapshot's nodes
//     and pods, and a fake clientset (events and the status ConfigMap go there).
//
// It calls RunOnce once and prints its wall time, the process's CPU seconds during it (getrusage, user +
// sys), the nodes asked per group (the test provider's scale-up callback), the pods the pod list
// processors took off the unschedulable list (FilterOutSchedulable: those that fit existing or upcoming
// nodes) with the time they took, and the scale-up's time and status.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	apiv1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"k8s.io/autoscaler/cluster-autoscaler/cloudprovider"
	testprovider "k8s.io/autoscaler/cluster-autoscaler/cloudprovider/test"
	"k8s.io/autoscaler/cluster-autoscaler/context"
	"k8s.io/autoscaler/cluster-autoscaler/core"
	"k8s.io/autoscaler/cluster-autoscaler/core/podlistprocessor"
	"k8s.io/autoscaler/cluster-autoscaler/core/scaleup"
	"k8s.io/autoscaler/cluster-autoscaler/core/scaleup/orchestrator"
	"k8s.io/autoscaler/cluster-autoscaler/debuggingsnapshot"
	ca_processors "k8s.io/autoscaler/cluster-autoscaler/processors"
	"k8s.io/autoscaler/cluster-autoscaler/processors/nodegroupset"
	"k8s.io/autoscaler/cluster-autoscaler/processors/nodeinfosprovider"
	"k8s.io/autoscaler/cluster-autoscaler/processors/pods"
	"k8s.io/autoscaler/cluster-autoscaler/processors/scaledowncandidates"
	"k8s.io/autoscaler/cluster-autoscaler/processors/scaledowncandidates/emptycandidates"
	"k8s.io/autoscaler/cluster-autoscaler/processors/scaledowncandidates/previouscandidates"
	"k8s.io/autoscaler/cluster-autoscaler/processors/status"
	"k8s.io/autoscaler/cluster-autoscaler/simulator/clustersnapshot"
	"k8s.io/autoscaler/cluster-autoscaler/simulator/drainability/rules"
	"k8s.io/autoscaler/cluster-autoscaler/simulator/options"
	"k8s.io/autoscaler/cluster-autoscaler/simulator/predicatechecker"
	"k8s.io/autoscaler/cluster-autoscaler/simulator/scheduling"
	caerrors "k8s.io/autoscaler/cluster-autoscaler/utils/errors"
	kube_util "k8s.io/autoscaler/cluster-autoscaler/utils/kubernetes"
	schedulerframework "k8s.io/kubernetes/pkg/scheduler/framework"
)

var (
	surgeSnapshotPath = flag.String("snapshot", "", "the cluster snapshot: a kubectl List of Nodes and Pods, JSON or YAML (as ekscale-autoscaler simulate --snapshot reads it)")
	surgeScenarioPath = flag.String("scenario", "", "the simulated EKS scenario the snapshot was made on (as ekscale-provider --sim-file reads it): its nodeGroups")
)

// nodeGroupLabel is EKS's label naming a node's managed node group: how a snapshot's node is put in its group.
const surgeNodeGroupLabel = "eks.amazonaws.com/nodegroup"

// surgeScenario is the part of ekscale's scenario file (src/cloud/simulated_eks/scenario.rs) that a node
// group's size limits and template come from; other keys are ignored.
type surgeScenario struct {
	Region     string       `json:"region"`
	NodeGroups []surgeGroup `json:"nodeGroups"`
}

type surgeGroup struct {
	Name         string                 `json:"name"`
	InstanceType string                 `json:"instanceType"`
	Zones        []string               `json:"zones"`
	MinSize      int                    `json:"minSize"`
	MaxSize      int                    `json:"maxSize"`
	CapacityType string                 `json:"capacityType"`
	Labels       map[string]string      `json:"labels"`
	Allocatable  map[string]interface{} `json:"allocatable"`
	Taints       []struct {
		Key    string `json:"key"`
		Value  string `json:"value"`
		Effect string `json:"effect"`
	} `json:"taints"`
}

func surgeReadScenario(path string) (surgeScenario, error) {
	var s surgeScenario
	data, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := yaml.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s is not a scenario: %w", path, err)
	}
	if len(s.NodeGroups) == 0 {
		return s, fmt.Errorf("%s: no nodeGroups", path)
	}
	seen := map[string]bool{}
	for i, g := range s.NodeGroups {
		if g.Name == "" || seen[g.Name] {
			return s, fmt.Errorf("%s: nodeGroups[%d] has no name or a name used twice (%q)", path, i, g.Name)
		}
		seen[g.Name] = true
		if g.MinSize < 0 || g.MaxSize < g.MinSize {
			return s, fmt.Errorf("%s: group %s: minSize %d and maxSize %d are not 0 <= min <= max", path, g.Name, g.MinSize, g.MaxSize)
		}
	}
	return s, nil
}

// surgeSnapshot is the snapshot's nodes and pods, in the order listed.
type surgeSnapshot struct {
	nodes []*apiv1.Node
	pods  []*apiv1.Pod
}

func surgeReadSnapshot(path string) (surgeSnapshot, error) {
	var snap surgeSnapshot
	data, err := os.ReadFile(path)
	if err != nil {
		return snap, err
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		if data, err = yaml.YAMLToJSON(data); err != nil {
			return snap, fmt.Errorf("%s is neither JSON nor YAML: %w", path, err)
		}
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return snap, fmt.Errorf("%s is not a List: %w", path, err)
	}
	for i, raw := range list.Items {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return snap, fmt.Errorf("%s: items[%d]: %w", path, i, err)
		}
		switch head.Kind {
		case "Node":
			node := &apiv1.Node{}
			if err := json.Unmarshal(raw, node); err != nil {
				return snap, fmt.Errorf("%s: items[%d] (Node): %w", path, i, err)
			}
			if node.UID == "" {
				node.UID = types.UID("node/" + node.Name)
			}
			snap.nodes = append(snap.nodes, node)
		case "Pod":
			pod := &apiv1.Pod{}
			if err := json.Unmarshal(raw, pod); err != nil {
				return snap, fmt.Errorf("%s: items[%d] (Pod): %w", path, i, err)
			}
			// The API server gives every object a UID, and cluster-autoscaler tells pods apart by it
			// (FilterOutSchedulable keeps the pods whose UID it did not place): a snapshot written
			// without UIDs gets one per pod, from its namespace and name.
			if pod.UID == "" {
				pod.UID = types.UID(pod.Namespace + "/" + pod.Name)
			}
			snap.pods = append(snap.pods, pod)
		default:
			// PodDisruptionBudgets and the rest: not read by a scale-up.
		}
	}
	if len(snap.nodes)+len(snap.pods) == 0 {
		return snap, fmt.Errorf("%s: no Nodes and no Pods", path)
	}
	return snap, nil
}

// surgeQuantity reads a scenario's allocatable value: a string ('4', 16Gi) or a YAML number.
func surgeQuantity(v interface{}) (resource.Quantity, error) {
	switch x := v.(type) {
	case string:
		return resource.ParseQuantity(x)
	case float64:
		return resource.ParseQuantity(fmt.Sprint(x))
	default:
		return resource.Quantity{}, fmt.Errorf("%v is neither a string nor a number", v)
	}
}

// surgeTemplate is a group's template NodeInfo, as ekscale's simulated EKS builds its template node
// (src/cloud/template.rs): the well-known labels, the group's labels and taints, Ready. Its allocatable is
// the scenario's `allocatable`, else the allocatable of one of the group's nodes (cluster-autoscaler's
// default template provider takes a group's template from a ready node of it anyway, when it has one).
func surgeTemplate(region string, g surgeGroup, sample *apiv1.Node) (*schedulerframework.NodeInfo, error) {
	name := "template-node-for-" + g.Name
	zone := ""
	if len(g.Zones) > 0 {
		zone = g.Zones[0]
	}
	capacityType := g.CapacityType
	if capacityType == "" {
		capacityType = "ON_DEMAND"
	}
	arch := "amd64"
	if sample != nil && sample.Labels["kubernetes.io/arch"] != "" {
		arch = sample.Labels["kubernetes.io/arch"]
	}
	labels := map[string]string{
		"kubernetes.io/os":                 "linux",
		"kubernetes.io/arch":               arch,
		"kubernetes.io/hostname":           name,
		"node.kubernetes.io/instance-type": g.InstanceType,
		"topology.kubernetes.io/zone":      zone,
		"topology.kubernetes.io/region":    region,
		surgeNodeGroupLabel:                g.Name,
		"eks.amazonaws.com/capacityType":   capacityType,
	}
	for k, v := range g.Labels {
		labels[k] = v
	}
	allocatable := apiv1.ResourceList{}
	for k, v := range g.Allocatable {
		q, err := surgeQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("group %s: allocatable %s: %w", g.Name, k, err)
		}
		allocatable[apiv1.ResourceName(k)] = q
	}
	if len(allocatable) == 0 {
		if sample == nil {
			return nil, fmt.Errorf("group %s has no allocatable in the scenario and no node in the snapshot to take it from", g.Name)
		}
		allocatable = sample.Status.Allocatable.DeepCopy()
	}
	var taints []apiv1.Taint
	for _, t := range g.Taints {
		taints = append(taints, apiv1.Taint{Key: t.Key, Value: t.Value, Effect: apiv1.TaintEffect(t.Effect)})
	}
	node := &apiv1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       apiv1.NodeSpec{ProviderID: name, Taints: taints},
		Status: apiv1.NodeStatus{
			Capacity:    allocatable.DeepCopy(),
			Allocatable: allocatable,
			Conditions:  []apiv1.NodeCondition{{Type: apiv1.NodeReady, Status: apiv1.ConditionTrue}},
		},
	}
	info := schedulerframework.NewNodeInfo()
	info.SetNode(node)
	return info, nil
}

// surgeScaleUps records the test provider's scale-up callback: the nodes asked per group.
type surgeScaleUps struct {
	sync.Mutex
	asked map[string]int
}

func (s *surgeScaleUps) onScaleUp(id string, delta int) error {
	s.Lock()
	defer s.Unlock()
	s.asked[id] += delta
	return nil
}

// surgeCountingPodListProcessor counts the pods the pod list processors take off the unschedulable list
// (FilterOutSchedulable takes those that fit existing nodes, or nodes already coming) and times them.
type surgeCountingPodListProcessor struct {
	inner    pods.PodListProcessor
	in, out  int
	duration time.Duration
}

func (p *surgeCountingPodListProcessor) Process(ctx *context.AutoscalingContext, unschedulable []*apiv1.Pod) ([]*apiv1.Pod, error) {
	start := time.Now()
	left, err := p.inner.Process(ctx, unschedulable)
	p.duration += time.Since(start)
	p.in += len(unschedulable)
	p.out += len(left)
	return left, err
}

func (p *surgeCountingPodListProcessor) CleanUp() { p.inner.CleanUp() }

// surgeTimedOrchestrator times the scale-up (the estimates of every group and the expander's choice).
type surgeTimedOrchestrator struct {
	scaleup.Orchestrator
	duration time.Duration
	status   *status.ScaleUpStatus
}

func (o *surgeTimedOrchestrator) ScaleUp(unschedulable []*apiv1.Pod, nodes []*apiv1.Node, daemonSets []*appsv1.DaemonSet,
	nodeInfos map[string]*schedulerframework.NodeInfo, allOrNothing bool) (*status.ScaleUpStatus, caerrors.AutoscalerError) {
	start := time.Now()
	st, err := o.Orchestrator.ScaleUp(unschedulable, nodes, daemonSets, nodeInfos, allOrNothing)
	o.duration += time.Since(start)
	o.status = st
	return st, err
}

func surgeResult(r status.ScaleUpResult) string {
	switch r {
	case status.ScaleUpSuccessful:
		return "ScaleUpSuccessful"
	case status.ScaleUpError:
		return "ScaleUpError"
	case status.ScaleUpNoOptionsAvailable:
		return "ScaleUpNoOptionsAvailable"
	case status.ScaleUpNotNeeded:
		return "ScaleUpNotNeeded"
	case status.ScaleUpNotTried:
		return "ScaleUpNotTried"
	case status.ScaleUpInCooldown:
		return "ScaleUpInCooldown"
	default:
		return fmt.Sprint(int(r))
	}
}

func surgeCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func surgeFail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	klog.InitFlags(nil)
	pflag.CommandLine.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()
	if *surgeSnapshotPath == "" || *surgeScenarioPath == "" {
		fmt.Fprintln(os.Stderr, "usage: ca-runonce --snapshot FILE --scenario FILE.yaml [cluster-autoscaler's flags...]")
		os.Exit(2)
	}
	scenario, err := surgeReadScenario(*surgeScenarioPath)
	if err != nil {
		surgeFail("%v", err)
	}
	readStart := time.Now()
	snap, err := surgeReadSnapshot(*surgeSnapshotPath)
	if err != nil {
		surgeFail("%v", err)
	}
	fmt.Printf("input: %d nodes, %d pods (read in %.1f s)\n", len(snap.nodes), len(snap.pods), time.Since(readStart).Seconds())

	// Options as cluster-autoscaler's flags give them (defaults, unless given on this command line).
	autoscalingOptions := createAutoscalingOptions()

	// The cloud: one test node group a scenario group, its nodes registered in it. The test provider's
	// instances are named after the nodes, and cluster-autoscaler matches a node to its instance by
	// providerID, so each node's providerID is set to its name (as the tests' BuildTestNode does).
	byGroup := map[string][]*apiv1.Node{}
	unmanaged := 0
	for _, node := range snap.nodes {
		node.Spec.ProviderID = node.Name
		g := node.Labels[surgeNodeGroupLabel]
		byGroup[g] = append(byGroup[g], node)
	}
	templates := map[string]*schedulerframework.NodeInfo{}
	for _, g := range scenario.NodeGroups {
		var sample *apiv1.Node
		if nodes := byGroup[g.Name]; len(nodes) > 0 {
			sample = nodes[0]
		}
		if templates[g.Name], err = surgeTemplate(scenario.Region, g, sample); err != nil {
			surgeFail("%s: %v", *surgeScenarioPath, err)
		}
	}
	scaleUps := &surgeScaleUps{asked: map[string]int{}}
	provider := testprovider.NewTestAutoprovisioningCloudProvider(scaleUps.onScaleUp, func(id, name string) error {
		return nil
	}, nil, nil, nil, templates)
	known := map[string]bool{}
	for _, g := range scenario.NodeGroups {
		known[g.Name] = true
		nodes := byGroup[g.Name]
		provider.AddNodeGroup(g.Name, g.MinSize, g.MaxSize, len(nodes))
		for _, node := range nodes {
			provider.AddNode(g.Name, node)
		}
	}
	for g, nodes := range byGroup {
		if !known[g] {
			unmanaged += len(nodes)
		}
	}
	if unmanaged > 0 {
		fmt.Printf("input: %d nodes in no scenario group (not autoscaled)\n", unmanaged)
	}

	// The cluster: test listers over the snapshot; a fake clientset for events and the status ConfigMap.
	readyNodes := []*apiv1.Node{}
	for _, node := range snap.nodes {
		if kube_util.IsNodeReadyAndSchedulable(node) {
			readyNodes = append(readyNodes, node)
		}
	}
	daemonSets, _ := kube_util.NewTestDaemonSetLister(nil)
	controllers, _ := kube_util.NewTestReplicationControllerLister(nil)
	jobs, _ := kube_util.NewTestJobLister(nil)
	replicaSets, _ := kube_util.NewTestReplicaSetLister(nil)
	statefulSets, _ := kube_util.NewTestStatefulSetLister(nil)
	listers := kube_util.NewListerRegistry(
		kube_util.NewTestNodeLister(snap.nodes),
		kube_util.NewTestNodeLister(readyNodes),
		kube_util.NewTestPodLister(snap.pods),
		kube_util.NewTestPodDisruptionBudgetLister([]*policyv1.PodDisruptionBudget{}),
		daemonSets, controllers, jobs, replicaSets, statefulSets)
	kubeClient := clientsetfake.NewSimpleClientset()
	informerFactory := informers.NewSharedInformerFactory(kubeClient, 0)
	kubeClients := context.NewAutoscalingKubeClients(autoscalingOptions, kubeClient, informerFactory)
	kubeClients.ListerRegistry = listers

	// As cluster-autoscaler's buildAutoscaler wires it (provisioning requests and proactive scale-up off:
	// their flags' defaults).
	predicateChecker, err := predicatechecker.NewSchedulerBasedPredicateChecker(informerFactory, autoscalingOptions.SchedulerConfig)
	if err != nil {
		surgeFail("building the predicate checker: %v", err)
	}
	deleteOptions := options.NewNodeDeleteOptions(autoscalingOptions)
	drainabilityRules := rules.Default(deleteOptions)
	timed := &surgeTimedOrchestrator{Orchestrator: orchestrator.New()}
	opts := core.AutoscalerOptions{
		AutoscalingOptions:     autoscalingOptions,
		ClusterSnapshot:        clustersnapshot.NewDeltaClusterSnapshot(),
		KubeClient:             kubeClient,
		InformerFactory:        informerFactory,
		AutoscalingKubeClients: kubeClients,
		CloudProvider:          provider,
		DebuggingSnapshotter:   debuggingsnapshot.NewDebuggingSnapshotter(false),
		PredicateChecker:       predicateChecker,
		DeleteOptions:          deleteOptions,
		DrainabilityRules:      drainabilityRules,
		ScaleUpOrchestrator:    timed,
	}
	opts.Processors = ca_processors.DefaultProcessors(autoscalingOptions)
	opts.Processors.TemplateNodeInfoProvider = nodeinfosprovider.NewDefaultTemplateNodeInfoProvider(nodeInfoCacheExpireTime, *forceDaemonSets)
	counting := &surgeCountingPodListProcessor{inner: podlistprocessor.NewDefaultPodListProcessor(opts.PredicateChecker, scheduling.ScheduleAnywhere)}
	opts.Processors.PodListProcessor = counting
	comparers := []scaledowncandidates.CandidatesComparer{}
	if autoscalingOptions.ParallelDrain {
		previous := previouscandidates.NewPreviousCandidates()
		comparers = []scaledowncandidates.CandidatesComparer{
			emptycandidates.NewEmptySortingProcessor(emptycandidates.NewNodeInfoGetter(opts.ClusterSnapshot), deleteOptions, drainabilityRules),
			previous,
		}
		opts.Processors.ScaleDownCandidatesNotifier.Register(previous)
	}
	cp := scaledowncandidates.NewCombinedScaleDownCandidatesProcessor()
	cp.Register(scaledowncandidates.NewScaleDownCandidatesSortingProcessor(comparers))
	if autoscalingOptions.ScaleDownDelayTypeLocal {
		sdp := scaledowncandidates.NewScaleDownCandidatesDelayProcessor()
		cp.Register(sdp)
		opts.Processors.ScaleStateNotifier.Register(sdp)
	}
	opts.Processors.ScaleDownNodeProcessor = cp
	var comparator nodegroupset.NodeInfoComparator
	if len(autoscalingOptions.BalancingLabels) > 0 {
		comparator = nodegroupset.CreateLabelNodeInfoComparator(autoscalingOptions.BalancingLabels)
	} else if autoscalingOptions.CloudProviderName == cloudprovider.AwsProviderName {
		comparator = nodegroupset.CreateAwsNodeInfoComparator(autoscalingOptions.BalancingExtraIgnoredLabels, autoscalingOptions.NodeGroupSetRatios)
		opts.Processors.TemplateNodeInfoProvider = nodeinfosprovider.NewAsgTagResourceNodeInfoProvider(nodeInfoCacheExpireTime, *forceDaemonSets)
	} else {
		comparator = nodegroupset.CreateGenericNodeInfoComparator(autoscalingOptions.BalancingExtraIgnoredLabels, autoscalingOptions.NodeGroupSetRatios)
	}
	opts.Processors.NodeGroupSetProcessor = &nodegroupset.BalancingNodeGroupSetProcessor{Comparator: comparator}

	autoscaler, caErr := core.NewAutoscaler(opts, informerFactory)
	if caErr != nil {
		surgeFail("building the autoscaler: %v", caErr)
	}
	stop := make(chan struct{})
	informerFactory.Start(stop)

	fmt.Printf("options: cloud-provider=%s expander=%s estimator=%s max-nodes-total=%d scale-down-enabled=%v "+
		"max-node-group-binpacking-duration=%s max-binpacking-time=%s max-nodes-per-scaleup=%d "+
		"balance-similar-node-groups=%v parallel-scale-up=%v new-pod-scale-up-delay=%s; GOMAXPROCS=%d\n",
		autoscalingOptions.CloudProviderName, autoscalingOptions.ExpanderNames, autoscalingOptions.EstimatorName,
		autoscalingOptions.MaxNodesTotal, autoscalingOptions.ScaleDownEnabled,
		autoscalingOptions.MaxNodeGroupBinpackingDuration, autoscalingOptions.MaxBinpackingTime,
		autoscalingOptions.MaxNodesPerScaleUp, autoscalingOptions.BalanceSimilarNodeGroups,
		autoscalingOptions.ParallelScaleUp, autoscalingOptions.NewPodScaleUpDelay, runtime.GOMAXPROCS(0))

	runtime.GC()
	fmt.Printf("RunOnce: started at %s (pid %d)\n", time.Now().UTC().Format(time.RFC3339), os.Getpid())
	cpuStart := surgeCPU()
	start := time.Now()
	runErr := autoscaler.RunOnce(time.Now())
	wall := time.Since(start)
	cpu := surgeCPU() - cpuStart
	close(stop)

	if runErr != nil {
		fmt.Printf("RunOnce error: %v\n", runErr)
	}
	fmt.Printf("RunOnce: ended at %s; wall %.3f s, CPU %.3f s (user+sys)\n", time.Now().UTC().Format(time.RFC3339), wall.Seconds(), cpu.Seconds())
	fmt.Printf("pod list processors: %d unschedulable pods in, %d out, %d taken off (fit existing or upcoming nodes) in %.3f s\n",
		counting.in, counting.out, counting.in-counting.out, counting.duration.Seconds())
	fmt.Printf("scale-up: %.3f s", timed.duration.Seconds())
	if timed.status != nil {
		fmt.Printf(", result %s, %d pods triggered it, %d remain unschedulable, %d await evaluation",
			surgeResult(timed.status.Result), len(timed.status.PodsTriggeredScaleUp), len(timed.status.PodsRemainUnschedulable),
			len(timed.status.PodsAwaitEvaluation))
	}
	fmt.Println()
	scaleUps.Lock()
	groups := make([]string, 0, len(scaleUps.asked))
	total := 0
	for g, n := range scaleUps.asked {
		groups = append(groups, g)
		total += n
	}
	sort.Strings(groups)
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		parts = append(parts, fmt.Sprintf("%s +%d", g, scaleUps.asked[g]))
	}
	scaleUps.Unlock()
	fmt.Printf("nodes asked: %d (%s)\n", total, strings.Join(parts, ", "))
}
