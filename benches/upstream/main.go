// SPDX-License-Identifier: Apache-2.0
//
// cluster-autoscaler's own estimator on one pod mix of benches/estimator.rs (a JSON file written with
// ESTIMATOR_MIX_DIR): the packing figures BENCHMARKS.md compares ekscale with. This file is ekscale's;
// the packages it calls are cluster-autoscaler's (Apache-2.0, The Kubernetes Authors), built from a
// checkout of kubernetes/autoscaler by run.sh, beside which this file is kept.
//
// The estimator is built as cluster-autoscaler's main.go builds it: a scheduler-based predicate checker
// over the default scheduler profile, a DeltaClusterSnapshot, the BinpackingNodeEstimator with the
// DecreasingPodOrderer; the limiter has no thresholds, so no node limit and no time limit. Its result
// is random run to run: FitsAnyNodeMatching rotates over the snapshot's node list, which the delta
// snapshot rebuilds from a Go map after each AddPod, and Go randomises map order. So one mix is run
// -runs times, each on a fresh snapshot, and each run printed as "run<TAB>nodes<TAB>ms".
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	apiv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"

	"k8s.io/autoscaler/cluster-autoscaler/estimator"
	"k8s.io/autoscaler/cluster-autoscaler/simulator/clustersnapshot"
	"k8s.io/autoscaler/cluster-autoscaler/simulator/predicatechecker"
	schedulerframework "k8s.io/kubernetes/pkg/scheduler/framework"
)

// mix is benches/estimator.rs's JSON: the node's allocatable as [cpu millis, MiB, pods] and each
// equivalence group as [cpu millis, memory bytes, pod count].
type mix struct {
	Node   [3]int64   `json:"node"`
	Groups [][3]int64 `json:"groups"`
}

func readMix(path string) (mix, error) {
	var m mix
	data, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("%s is not a mix (want {\"node\": [cpu m, MiB, pods], \"groups\": [[cpu m, bytes, count], ...]}): %w", path, err)
	}
	if m.Node[0] <= 0 || m.Node[1] <= 0 || m.Node[2] <= 0 {
		return m, fmt.Errorf("%s: the node's cpu, memory and pods must all be positive, got %v", path, m.Node)
	}
	if len(m.Groups) == 0 {
		return m, fmt.Errorf("%s: no pod groups", path)
	}
	for i, g := range m.Groups {
		if g[0] < 0 || g[1] < 0 || g[2] <= 0 {
			return m, fmt.Errorf("%s: group %d has a negative request or no pods: %v", path, i, g)
		}
	}
	return m, nil
}

// template is the node group's template node, as a cloud provider's TemplateNodeInfo gives it.
func template(m mix) *schedulerframework.NodeInfo {
	allocatable := apiv1.ResourceList{
		apiv1.ResourceCPU:    *resource.NewMilliQuantity(m.Node[0], resource.DecimalSI),
		apiv1.ResourceMemory: *resource.NewQuantity(m.Node[1]<<20, resource.BinarySI),
		apiv1.ResourcePods:   *resource.NewQuantity(m.Node[2], resource.DecimalSI),
	}
	node := &apiv1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "template",
			Labels: map[string]string{
				"kubernetes.io/hostname":      "template",
				"topology.kubernetes.io/zone": "us-east-1a",
			},
		},
		Status: apiv1.NodeStatus{
			Capacity:    allocatable,
			Allocatable: allocatable,
			Conditions:  []apiv1.NodeCondition{{Type: apiv1.NodeReady, Status: apiv1.ConditionTrue}},
		},
	}
	info := schedulerframework.NewNodeInfo()
	info.SetNode(node)
	return info
}

// groups are the mix's pending pods, one equivalence group per shape, as the scale-up orchestrator
// hands them to the estimator.
func groups(m mix) ([]estimator.PodEquivalenceGroup, int) {
	var out []estimator.PodEquivalenceGroup
	total := 0
	for i, g := range m.Groups {
		requests := apiv1.ResourceList{
			apiv1.ResourceCPU:    *resource.NewMilliQuantity(g[0], resource.DecimalSI),
			apiv1.ResourceMemory: *resource.NewQuantity(g[1], resource.BinarySI),
		}
		var pods []*apiv1.Pod
		for j := int64(0); j < g[2]; j++ {
			name := fmt.Sprintf("m-%d-%d", i, j)
			pods = append(pods, &apiv1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)},
				Spec: apiv1.PodSpec{Containers: []apiv1.Container{{
					Name:      "main",
					Resources: apiv1.ResourceRequirements{Requests: requests},
				}}},
				Status: apiv1.PodStatus{Phase: apiv1.PodPending},
			})
		}
		total += len(pods)
		out = append(out, estimator.PodEquivalenceGroup{Pods: pods})
	}
	return out, total
}

func main() {
	path := flag.String("mix", "", "a mix JSON file written by benches/estimator.rs with ESTIMATOR_MIX_DIR")
	runs := flag.Int("runs", 20, "estimates to run on the mix, each on a fresh snapshot")
	flag.Parse()
	if *path == "" || *runs <= 0 {
		fmt.Fprintln(os.Stderr, "usage: upstream-estimator -mix FILE.json [-runs N>0]")
		os.Exit(2)
	}
	m, err := readMix(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	node := template(m)
	for run := 0; run < *runs; run++ {
		// A fresh checker per run, as a new cluster-autoscaler's first estimate: the checker keeps the
		// index FitsAnyNodeMatching last stopped at. A nil scheduler config is the default profile, as
		// main.go passes when --scheduler-config-file is unset; no API server, so the informers are fed
		// by a fake clientset (the estimate reads only the snapshot).
		factory := informers.NewSharedInformerFactory(clientsetfake.NewSimpleClientset(), 0)
		checker, err := predicatechecker.NewSchedulerBasedPredicateChecker(factory, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "building the predicate checker:", err)
			os.Exit(1)
		}
		pods, total := groups(m)
		est := estimator.NewBinpackingNodeEstimator(
			checker,
			clustersnapshot.NewDeltaClusterSnapshot(),
			estimator.NewThresholdBasedEstimationLimiter(nil),
			estimator.NewDecreasingPodOrderer(),
			estimator.NewEstimationContext(0, nil, 0),
			nil,
		)
		start := time.Now()
		nodes, placed := est.Estimate(pods, node, nil)
		ms := float64(time.Since(start).Microseconds()) / 1000
		if len(placed) != total {
			fmt.Fprintf(os.Stderr, "%s run %d: placed %d of %d pods; every pod of a mix fits an empty node\n", *path, run, len(placed), total)
			os.Exit(1)
		}
		fmt.Printf("%d\t%d\t%.1f\n", run, nodes, ms)
	}
}
