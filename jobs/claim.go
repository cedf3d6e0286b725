package jobs

import (
	"fmt"
	"regexp"
)

// Claim is the Kubernetes ResourceClaim a claim job stands for. A claim
// job is placed by Algorithm 1 like any job, beside mmk's own, but in the
// one instance the cluster's scheduler allocated to the claim, and mmk
// runs no process for it: the kubelet starts the pod's containers with
// the environment and mounts of the job's Grant (docs/kubernetes.md). It
// ends when the claim is unprepared.
type Claim struct {
	// Namespace, Name and UID identify the ResourceClaim.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// Pods are the pods the claim is reserved for, as namespace/name.
	Pods []string `json:"pods,omitempty"`
	// Instance is the key of the instance (GPU or MIG instance) the
	// scheduler allocated: the job is placed there or waits.
	Instance string `json:"instance"`
	// Device is the allocated device as the DRA driver published it
	// (pool/device), shown to people.
	Device string `json:"device,omitempty"`
}

// Grant is what a placed claim job's containers get: mmk's variables for
// the instance (device, MPS pipe, share and client priority, the hook and
// its scheduler) and the host paths those variables name, which the
// containers must see at the same paths.
type Grant struct {
	Env    []string `json:"env"`
	Mounts []Mount  `json:"mounts"`
}

// Mount is a host path a claim's containers get at the same path.
type Mount struct {
	Path     string `json:"path"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// Limits on a claim.
const (
	MaxClaimPods   = 256
	maxClaimUIDLen = 128
	maxInstanceLen = 128
)

// The characters of Kubernetes' names (RFC 1123): a DNS label, at most
// 63 of them, a DNS subdomain at most 253, each length checked apart
// (isDNSLabel, isDNSSubdomain). The lengths were bounded repetitions in
// the patterns, which compile to programs as long as their bound: a
// millisecond or more of every start of mmkd and of its store check.
var (
	dnsLabelChars     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomainChars = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

// ValidClaimUID reports a claim's UID as mmk takes it: letters, digits
// and ._:@+-, 1 to maxClaimUIDLen bytes (the API checks a claim's path
// with it too).
func ValidClaimUID(uid string) bool {
	return uid != "" && len(uid) <= maxClaimUIDLen && taskKeyPattern.MatchString(uid)
}

// isDNSLabel reports a Kubernetes namespace's name (a DNS label).
func isDNSLabel(s string) bool { return len(s) <= 63 && dnsLabelChars.MatchString(s) }

// isDNSSubdomain reports a Kubernetes object's name (a DNS subdomain).
func isDNSSubdomain(s string) bool { return len(s) <= 253 && dnsSubdomainChars.MatchString(s) }

// validateClaim checks what a claim job's spec must and must not hold:
// a claim job has a name, the claim's identity and instance, and no
// process of its own (command, env, workdir).
func (s *Spec) validateClaim() error {
	c := s.Claim
	switch {
	case len(s.Command) > 0:
		return &FieldError{"command", s.Command, "a claim job runs no process of mmk's (the kubelet starts its containers)"}
	case len(s.Env) > 0:
		return &FieldError{"env", len(s.Env), "a claim job's environment is the pod's"}
	case s.WorkDir != "":
		return &FieldError{"workdir", s.WorkDir, "a claim job runs no process of mmk's"}
	case s.Name == "":
		return &FieldError{"name", "", "a claim job needs a name"}
	case !isDNSLabel(c.Namespace):
		return &FieldError{"claim.namespace", c.Namespace, "must be a Kubernetes namespace (a DNS label)"}
	case !isDNSSubdomain(c.Name):
		return &FieldError{"claim.name", c.Name, "must be a Kubernetes object name (a DNS subdomain)"}
	case !ValidClaimUID(c.UID):
		return &FieldError{"claim.uid", c.UID, fmt.Sprintf("must be the claim's UID (letters, digits and ._:@+-, at most %d bytes)", maxClaimUIDLen)}
	case c.Instance == "" || len(c.Instance) > maxInstanceLen || !Printable(c.Instance):
		return &FieldError{"claim.instance", c.Instance, fmt.Sprintf("must name an instance of the node (printable, at most %d bytes)", maxInstanceLen)}
	case len(c.Device) > 2*maxInstanceLen || !Printable(c.Device):
		return &FieldError{"claim.device", c.Device, fmt.Sprintf("must be printable, at most %d bytes", 2*maxInstanceLen)}
	case len(c.Pods) > MaxClaimPods:
		return &FieldError{"claim.pods", len(c.Pods), fmt.Sprintf("has more than %d pods", MaxClaimPods)}
	}
	for i, p := range c.Pods {
		if len(p) > 64+1+253 || !Printable(p) {
			return &FieldError{fmt.Sprintf("claim.pods[%d]", i), p, "must be namespace/name"}
		}
	}
	return nil
}

// IsClaim reports a claim job.
func (j *Job) IsClaim() bool { return j.Spec.Claim != nil }
