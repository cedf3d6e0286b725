package web

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/web/webtest"
)

func ptr[T any](v T) *T { return &v }

// healthView is two GPUs' health over three seconds: one with MIG, whose
// utilisation NVML does not give, one without, which saw an XID.
func healthView(at time.Time) node.HealthView {
	var h0, h1 []node.HealthSample
	for i := range 3 {
		t := at.Add(time.Duration(i-2) * time.Second)
		h0 = append(h0, node.HealthSample{At: t, PowerW: ptr(90.5 + float64(i)), TempC: ptr(33)})
		h1 = append(h1, node.HealthSample{At: t, UtilPct: ptr(40 + i), MemUtilPct: ptr(10), PowerW: ptr(300.25), TempC: ptr(55 + i)})
	}
	return node.HealthView{At: at, Every: time.Second, Window: 10 * time.Minute, GPUs: []node.GPUHealthView{
		{GPUHealth: partitioner.GPUHealth{GPU: 0, UUID: "GPU-aaa", PowerW: ptr(92.5), PowerLimitW: ptr(700.0), TempC: ptr(33),
			ECCUncorrected: ptr[uint64](0), XIDs: ptr[uint64](0),
			Unknown: map[string]string{"utilPct": "NVML_ERROR_NOT_SUPPORTED", "memUtilPct": "NVML_ERROR_NOT_SUPPORTED"}}, History: h0},
		{GPUHealth: partitioner.GPUHealth{GPU: 1, UUID: "GPU-bbb", UtilPct: ptr(42), MemUtilPct: ptr(10), PowerW: ptr(300.25), PowerLimitW: ptr(700.0),
			TempC: ptr(57), ECCUncorrected: ptr[uint64](2), XIDs: ptr[uint64](3), LastXID: 79}, History: h1},
	}}
}

// TestGPUHealthAPI: GET /api/v1/gpus/health gives each GPU's last
// readings and its history, since a time where asked; a bad time is a
// 400 naming since; a node that reads no health answers 503.
func TestGPUHealthAPI(t *testing.T) {
	ts := newTestServer(t)
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	ts.node.SetHealth(healthView(at))
	tests := []struct {
		query   string
		code    int
		samples int
		field   string
	}{
		{"", 200, 3, ""},
		{"?since=2026-11-25T09:59:58.5Z", 200, 2, ""},
		{"?since=2026-11-25T10:00:00Z", 200, 0, ""},
		{"?since=yesterday", 400, 0, "since"},
		{"?limit=3", 400, 0, "limit"},
	}
	for _, tt := range tests {
		r := ts.do(t, "GET", "/api/v1/gpus/health"+tt.query, "")
		if r.code != tt.code {
			t.Errorf("%s: %d %s, want %d", tt.query, r.code, r.body, tt.code)
			continue
		}
		if tt.code != 200 {
			var e struct{ Field string }
			if json.Unmarshal([]byte(r.body), &e); e.Field != tt.field {
				t.Errorf("%s: field %q, want %q", tt.query, e.Field, tt.field)
			}
			continue
		}
		var v node.HealthView
		if err := json.Unmarshal([]byte(r.body), &v); err != nil {
			t.Fatal(err)
		}
		if len(v.GPUs) != 2 || len(v.GPUs[0].History) != tt.samples || len(v.GPUs[1].History) != tt.samples || v.Every != time.Second {
			t.Errorf("%s: %+v, want 2 GPUs with %d samples", tt.query, v, tt.samples)
		}
		if tt.samples > 0 && (v.GPUs[1].History[0].UtilPct == nil || *v.GPUs[1].History[tt.samples-1].TempC != 57) {
			t.Errorf("%s: GPU 1's samples %+v", tt.query, v.GPUs[1].History)
		}
	}
	// Unknown readings are null, with the reason.
	r := ts.do(t, "GET", "/api/v1/gpus/health", "")
	for _, want := range []string{`"utilPct":null`, `"unknown":{"memUtilPct":"NVML_ERROR_NOT_SUPPORTED","utilPct":"NVML_ERROR_NOT_SUPPORTED"}`, `"xids":3,"lastXid":79`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("health lacks %s: %s", want, r.body)
		}
	}
	noHealth := newTestServer(t, func(o *Options) { o.Node = struct{ Node }{o.Node} })
	if r := noHealth.do(t, "GET", "/api/v1/gpus/health", ""); r.code != 503 {
		t.Errorf("a node without health: %d %s, want 503", r.code, r.body)
	}
}

// TestGPUMetrics: each GPU's health in /metrics as DCGM exporter would
// export it (gpu and UUID labels), a reading left out where unknown; the
// names and labels are the golden list's.
func TestGPUMetrics(t *testing.T) {
	ts := newTestServer(t)
	ts.node.SetHealth(healthView(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)))
	r := ts.do(t, "GET", "/metrics", "")
	lines := strings.Split(r.body, "\n")
	g0, g1 := `UUID="GPU-aaa",gpu="0"`, `UUID="GPU-bbb",gpu="1"`
	for _, line := range []string{
		"mmk_gpu_util{" + g1 + "} 42", "mmk_gpu_mem_copy_util{" + g1 + "} 10",
		"mmk_gpu_power_usage{" + g0 + "} 92.5", "mmk_gpu_power_usage{" + g1 + "} 300.25", "mmk_gpu_power_limit{" + g1 + "} 700",
		"mmk_gpu_temp{" + g0 + "} 33", "mmk_gpu_temp{" + g1 + "} 57",
		"mmk_gpu_ecc_dbe_volatile_total{" + g1 + "} 2", "mmk_gpu_xid_errors_total{" + g1 + "} 3", "mmk_gpu_last_xid{" + g1 + "} 79",
		"mmk_gpu_xid_errors_total{" + g0 + "} 0",
	} {
		if !slices.Contains(lines, line) {
			t.Errorf("metrics lack the line %s", line)
		}
	}
	if strings.Contains(r.body, "mmk_gpu_util{"+g0) {
		t.Error("metrics have GPU 0's utilisation, which NVML did not give")
	}
	got, err := webtest.Metrics(r.body, "mmk_gpu_")
	if err != nil {
		t.Fatal(err)
	}
	want, err := webtest.ReadGolden("testdata/gpu-metrics.golden")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("GPU metrics differ from testdata/gpu-metrics.golden:\n%s", strings.Join(got, "\n"))
	}
}
