// The real node's cluster DNS: CoreDNS with only the plugins it needs (its kubernetes plugin
// answers for Services and Pods under cluster.local; nothing is forwarded, as nothing beyond
// this machine is reachable), so its build pulls in no cloud provider's SDK.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
	"github.com/coredns/coredns/coremain"
)

func init() {
	// In the order CoreDNS's plugin.cfg gives them: a request passes through them in this order.
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "cache", "kubernetes"}
}

func main() { coremain.Run() }
