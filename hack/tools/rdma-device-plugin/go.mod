module github.com/rdmasuite/rdmasuite/hack/tools/rdma-device-plugin

go 1.25.7

require (
	github.com/Mellanox/rdmamap v1.2.0
	google.golang.org/grpc v1.72.2
	k8s.io/kubelet v0.35.4
)

require (
	github.com/vishvananda/netlink v1.3.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
	golang.org/x/net v0.47.0 // indirect
	golang.org/x/sys v0.42.0 // indirect
	golang.org/x/text v0.31.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250528174236-200df99c418a // indirect
	google.golang.org/protobuf v1.36.8 // indirect
)
