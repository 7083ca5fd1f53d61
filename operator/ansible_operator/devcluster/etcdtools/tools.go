//go:build tools

// etcdctl and etcdutl of the release the local cluster's etcd is, for the etcd example's image.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
)
