package dra

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mmkgpu/mmk/jobs"
)

const head = `"apiVersion":"mmk.dev/v1alpha1","kind":"ClaimConfig"`

// TestParseConfig: the configuration is read strictly, and every refusal
// says what is wrong.
func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		raw, err string
	}{
		{`{` + head + `,"type":"online","priority":2,"workload":{"model":"resnet50","batch":1,"mode":"infer"}}`, ""},
		{`{` + head + `}`, ""},
		{`{` + head + `,"type":"online","slo":"p99=25ms"}`, ""},
		{`{` + head + `,"type":"online","slo":"p99=25"}`, "slo: latency target \"p99=25\": the bound \"25\" has no unit"},
		{`{"apiVersion":"v1","kind":"ClaimConfig"}`, "apiVersion"},
		{`{"apiVersion":"mmk.dev/v1alpha1","kind":"Other"}`, "kind"},
		{`{` + head + `,"type":"batch"}`, "type"},
		{`{` + head + `,"memory":"8Gi"}`, "unknown field"},
		{`{` + head + `} {}`, "more than one"},
		{`[`, "config"},
		{`{` + head + `,"taskKey":"` + strings.Repeat("k", maxConfigBytes) + `"}`, "bytes"},
	} {
		_, err := ParseConfig([]byte(tc.raw))
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseConfig(%.60s) = %v, want an error with %q", tc.raw, err, tc.err)
		}
	}
}

// TestParseConfigNormalisesSLO: a claim's target is kept in its normal
// form, as a job's is.
func TestParseConfigNormalisesSLO(t *testing.T) {
	c, err := ParseConfig([]byte(`{` + head + `,"type":"online","slo":" p99 = 25ms "}`))
	if err != nil || c.SLO != "p99=25ms" {
		t.Errorf("got %q, %v; want p99=25ms", c.SLO, err)
	}
}

// TestClaimConfig: the class's configuration comes first, the claim's
// overrides it, configurations of other drivers or other requests are
// left alone, and a bad one names its source.
func TestClaimConfig(t *testing.T) {
	opaque := func(src resourceapi.AllocationConfigSource, driver, raw string, requests ...string) resourceapi.DeviceAllocationConfiguration {
		return resourceapi.DeviceAllocationConfiguration{Source: src, Requests: requests, DeviceConfiguration: resourceapi.DeviceConfiguration{
			Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(raw)}}}}
	}
	claim, class := resourceapi.AllocationConfigSourceClaim, resourceapi.AllocationConfigSourceClass
	cfgs := []resourceapi.DeviceAllocationConfiguration{
		opaque(claim, DriverName, `{`+head+`,"taskKey":"mine","priority":3,"slo":"p99=20ms"}`, "gpu"),
		opaque(class, DriverName, `{`+head+`,"type":"online","priority":1}`),
		opaque(claim, "other.dev", `not json`),
		opaque(claim, DriverName, `{`+head+`,"type":"offline"}`, "other"),
	}
	got, err := claimConfig(cfgs, "gpu/small")
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != jobs.Online || got.TaskKey != "mine" || got.Priority == nil || *got.Priority != 3 || got.SLO != "p99=20ms" {
		t.Errorf("merged %+v", got)
	}
	if got, _ := claimConfig(nil, "gpu"); got.Type != jobs.Offline {
		t.Errorf("without configuration: %s, want offline", got.Type)
	}
	bad := append(cfgs, opaque(class, DriverName, `{}`))
	if _, err := claimConfig(bad, "gpu"); err == nil || !strings.Contains(err.Error(), "FromClass config 4") {
		t.Errorf("bad class config: %v", err)
	}
}

// FuzzParseConfig: no configuration panics, and one that is read has a
// valid type.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{`{` + head + `,"type":"online"}`, `{` + head + `,"workload":{"model":"x","mode":"train"},"mpsPriority":1}`, `{}`, `null`, `{"type":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := ParseConfig(raw)
		if err == nil && c.Type != "" && c.Type != jobs.Online && c.Type != jobs.Offline {
			t.Fatalf("ParseConfig(%q) type %q", raw, c.Type)
		}
	})
}

// TestAppliesTo: a configuration naming no request applies to every
// request; one naming a request applies to it and its subrequests only.
func TestAppliesTo(t *testing.T) {
	for _, tc := range []struct {
		requests []string
		request  string
		want     bool
	}{
		{nil, "gpu", true},
		{[]string{"gpu"}, "gpu", true},
		{[]string{"gpu"}, "gpu/small", true},
		{[]string{"gpu/small"}, "gpu/small", true},
		{[]string{"gpu/small"}, "gpu", false},
		{[]string{"gpu/small"}, "gpu/large", false},
		{[]string{"other"}, "gpu", false},
	} {
		if got := appliesTo(tc.requests, tc.request); got != tc.want {
			t.Errorf("appliesTo(%q, %q) = %v, want %v", tc.requests, tc.request, got, tc.want)
		}
	}
}
