// knp-host: sigs.k8s.io/kube-network-policies v0.8.0's controller run as a host process.
// Differences from upstream cmd/main.go: --kubeconfig (upstream only has rest.InClusterConfig),
// no AdminNetworkPolicy/Baseline (alpha CRDs, not installed), NRI left at the library default
// (containerd 1.6 has no NRI socket: the stub fails to connect and logs it; do NOT set
// NRIdisabled: v0.8.0 then dereferences a nil *nriPlugin for any IP that is not a known pod).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sys/unix"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

func main() { os.Exit(run()) }

func run() int {
	var (
		kubeconfig, hostnameOverride, metricsBind string
		queueID                                  int
		failOpen, bug1766                        bool
	)
	klog.InitFlags(nil)
	flag.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (empty: in-cluster config)")
	flag.StringVar(&hostnameOverride, "hostname-override", "", "Node name (must equal the kubelet's --hostname-override)")
	flag.StringVar(&metricsBind, "metrics-bind-address", "127.0.0.1:9080", "metrics listen address")
	flag.IntVar(&queueID, "nfqueue-id", 100, "nfqueue number")
	flag.BoolVar(&failOpen, "fail-open", false, "accept packets the controller cannot judge")
	flag.BoolVar(&bug1766, "netfilter-bug-1766-fix", false, "DNS prerouting workaround, not needed on kernels 6.12+")
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer cancel()
	if _, _, err := net.SplitHostPort(metricsBind); err != nil {
		fmt.Fprintln(os.Stderr, "bad --metrics-bind-address:", err)
		return 2
	}
	nodeName, err := nodeutil.GetHostname(hostnameOverride)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var cfg *rest.Config
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	http.Handle("/metrics", promhttp.Handler())
	go func() { utilruntime.HandleError(http.ListenAndServe(metricsBind, nil)) }()

	ctrl, err := networkpolicy.NewController(client,
		factory.Networking().V1().NetworkPolicies(), factory.Core().V1().Namespaces(), factory.Core().V1().Pods(),
		nil, nil, nil, nil,
		networkpolicy.Config{FailOpen: failOpen, QueueID: queueID, NodeName: nodeName, NetfilterBug1766Fix: bug1766})
	if err != nil {
		klog.ErrorS(err, "cannot start the network policy controller")
		return 1
	}
	errc := make(chan error, 1)
	go func() { errc <- ctrl.Run(ctx) }()
	factory.Start(ctx.Done())
	select {
	case <-ctx.Done():
		time.Sleep(2 * time.Second) // let Run's deferred cleanup finish
		return 0
	case err := <-errc: // Run returns early only when the nfqueue cannot be opened
		klog.ErrorS(err, "controller stopped")
		return 1
	}
}
