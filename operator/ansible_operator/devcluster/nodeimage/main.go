// The one program of the real node's image: the sandbox's first process ("pause") by default,
// holding a Pod's namespaces and reaping orphans until a signal. For tests of what a container
// sees: with -listen ADDR it also answers HTTP (reached through a Service), and -lookup NAME
// prints the addresses NAME resolves to in the container (its resolv.conf, the cluster DNS).
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	listen := flag.String("listen", "", "answer HTTP on this address (e.g. :8080)")
	lookup := flag.String("lookup", "", "print the addresses of this name, then exit")
	flag.Parse()
	if *lookup != "" {
		addresses, err := net.LookupHost(*lookup)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for _, address := range addresses {
			fmt.Println(address)
		}
		return
	}
	host, _ := os.Hostname()
	fmt.Printf("nodeimage: running in %s\n", host)
	if *listen != "" {
		http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "nodeimage in %s\n", host)
		})
		go func() {
			if err := http.ListenAndServe(*listen, nil); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}()
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
