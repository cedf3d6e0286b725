package web_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/web"
	"github.com/mmkgpu/mmk/web/mmkdtest"
)

// TestOpenAPIDocumentsMmkd holds openapi.json to a real mmkd's answers
// (TestOpenAPIDocumentsResponses does to the fake node's): on a MIG GPU
// and one without, with kernel scheduling and the latency controller on,
// claims are prepared (granted, and one waiting), read and released, and
// every field of every JSON answer must be in the answer's schema.
func TestOpenAPIDocumentsMmkd(t *testing.T) {
	dir := t.TempDir()
	d := mmkdtest.StartWith(t, []fakegpu.GPUSpec{
		{Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+3g.40gb@4"},
		{Model: "H200-141GB"},
	}, func(c *node.Config) {
		c.Sched = &node.SchedConfig{Policy: "fifo", Hook: filepath.Join(dir, "libmmkhook.so"), SocketDir: filepath.Join(dir, "run")}
		c.SLO = &node.SLOConfig{}
	})
	var mig string
	for _, in := range d.Node.Plan().GPUs[0].Instances {
		if in.Profile == "3g.40gb" {
			mig = in.Key
		}
	}
	var id string
	for _, tc := range []struct {
		method, path, doc, body string
		status                  int
	}{
		{"PUT", "/api/v1/claims/u1?wait=10", "/api/v1/claims/{uid}", claimBody(mig, ""), http.StatusCreated},
		{"PUT", "/api/v1/claims/u2?wait=10", "/api/v1/claims/{uid}", claimBody("gpu1", ""), http.StatusCreated},
		{"PUT", "/api/v1/claims/u3?wait=0", "/api/v1/claims/{uid}", claimBody(mig, ""), http.StatusAccepted},
		{"GET", "/api/v1/claims/u1", "/api/v1/claims/{uid}", "", http.StatusOK},
		{"GET", "/api/v1/gpus", "", "", http.StatusOK},
		{"GET", "/api/v1/plan", "", "", http.StatusOK},
		{"GET", "/api/v1/instances", "", "", http.StatusOK},
		{"GET", "/api/v1/jobs", "", "", http.StatusOK},
		{"GET", "/api/v1/jobs/{id}", "", "", http.StatusOK},
		{"GET", "/api/v1/jobs/{id}/events", "", "", http.StatusOK},
		{"GET", "/api/v1/jobs/{id}/usage", "", "", http.StatusOK},
		{"GET", "/api/v1/jobs/{id}/slo", "", "", http.StatusOK},
		{"GET", "/api/v1/usage", "", "", http.StatusOK},
		{"GET", "/api/v1/slo", "", "", http.StatusOK},
		{"GET", "/api/v1/kernelsched", "", "", http.StatusOK},
		{"GET", "/api/v1/reconfigs", "", "", http.StatusOK},
		{"GET", "/api/v1/whoami", "", "", http.StatusOK},
		{"GET", "/readyz", "", "", http.StatusOK},
		{"DELETE", "/api/v1/claims/u3", "/api/v1/claims/{uid}", "", http.StatusOK},
		{"DELETE", "/api/v1/claims/u2", "/api/v1/claims/{uid}", "", http.StatusOK},
		{"DELETE", "/api/v1/claims/u1", "/api/v1/claims/{uid}", "", http.StatusOK},
	} {
		path, doc := strings.ReplaceAll(tc.path, "{id}", id), tc.doc
		if doc == "" {
			doc = tc.path
		}
		code, body := call(t, d, tc.method, path, tc.body)
		if code != tc.status {
			t.Errorf("%s %s = %d %s, want %d", tc.method, path, code, body, tc.status)
			continue
		}
		if id == "" {
			var j jobs.Job // the first claim's job
			if err := json.Unmarshal([]byte(body), &j); err != nil {
				t.Fatal(err)
			}
			id = j.ID
		}
		gaps, err := web.UndocumentedFields(tc.method, doc, code, []byte(body))
		if err != nil {
			t.Error(err)
			continue
		}
		if len(gaps) > 0 {
			t.Errorf("%s %s answers fields its schema in openapi.json lacks: %s", tc.method, doc, strings.Join(gaps, ", "))
		}
	}
}
