// Package dra is mmk's Kubernetes Dynamic Resource Allocation driver, run
// as a kubelet plugin on each GPU node beside mmkd (cmd/mmk-dra;
// docs/kubernetes.md).
//
// It publishes every GPU instance mmkd manages (a MIG instance, or a whole
// GPU without MIG) as a device of the node's ResourceSlice pool, with
// attributes (model, profile, GPU, UUID, SMs, MIG) and the instance's memory as
// consumable capacity, so that the cluster's scheduler may allocate one
// instance to many claims while their memory fits. When the kubelet
// prepares a claim, the driver asks mmkd (through Mmkd, over its REST API)
// for a claim job pinned to the allocated instance: Algorithm 1 places it
// beside mmkd's own jobs and decides its MPS share and client priority
// (online or offline, from the claim's DeviceClass), and mmkd grants the
// environment and mounts. The driver writes them as a CDI spec for the
// claim, whose device the container runtime then applies to the pod's
// containers. Unpreparing releases the claim job and removes the spec.
//
// Libraries: k8s.io/dynamic-resource-allocation (kubeletplugin: the
// kubelet's registration and DRA gRPC services; resourceslice: the
// controller that keeps ResourceSlices in step) is the Kubernetes
// project's own helper for DRA drivers, used by its example driver and
// NVIDIA's; k8s.io/api/resource/v1 and k8s.io/client-go are the API's
// types and client; tags.cncf.io/container-device-interface is the CDI
// reference implementation (spec types, validation and the spec cache that
// container runtimes read with).
package dra
