package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/internal/mmkdtest"
	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
)

// call sends a request to the daemon and returns the status and body.
func call(t testing.TB, d *mmkdtest.Daemon, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, d.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// claimBody is a claim job's spec in a PUT.
func claimBody(instance, extra string) string {
	return `{"type":"offline","memory":"30GiB",` + extra + `"claim":{"namespace":"ns","name":"c","pods":["ns/p"],"instance":"` + instance + `"}}`
}

// TestClaimAPI walks a claim's life through the API of a real mmkd on a
// fake H100 cut 4g+3g: prepared and granted, prepared again (the same
// job), kept from a cancel, a second claim on the same 3g waiting for
// memory (202) until the first is released, released twice; and the
// refusals, each naming its field.
func TestClaimAPI(t *testing.T) {
	d := mmkdtest.Start(t, []fakegpu.GPUSpec{{Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+3g.40gb@4"}})
	inst := "gpu0-3g.40gb-at4"
	job := func(body string) jobs.Job {
		var j jobs.Job
		if err := json.Unmarshal([]byte(body), &j); err != nil {
			t.Fatalf("job %q: %v", body, err)
		}
		return j
	}
	code, body := call(t, d, "PUT", "/api/v1/claims/u1?wait=10", claimBody(inst, ""))
	first := job(body)
	if code != http.StatusCreated || first.State != jobs.Running || first.Grant == nil || first.Placement.InstanceKey != inst {
		t.Fatalf("PUT claim = %d %s", code, body)
	}
	if code, body := call(t, d, "PUT", "/api/v1/claims/u1?wait=1", claimBody(inst, "")); code != http.StatusOK || job(body).ID != first.ID {
		t.Errorf("PUT again = %d %s, want 200 with job %s", code, body, first.ID)
	}
	if code, _ := call(t, d, "POST", "/api/v1/jobs/"+first.ID+"/cancel", ""); code != http.StatusConflict {
		t.Errorf("cancel of a claim job = %d, want 409", code)
	}
	code, body = call(t, d, "PUT", "/api/v1/claims/u2?wait=0", claimBody(inst, ""))
	second := job(body)
	if code != http.StatusAccepted || second.State != jobs.Pending {
		t.Fatalf("PUT of a claim that does not fit yet = %d %s, want 202 pending", code, body)
	}
	if code, body := call(t, d, "DELETE", "/api/v1/claims/u1", ""); code != http.StatusOK || job(body).State != jobs.Succeeded {
		t.Errorf("DELETE = %d %s", code, body)
	}
	if code, _ := call(t, d, "DELETE", "/api/v1/claims/u1", ""); code != http.StatusNoContent {
		t.Errorf("DELETE again = %d, want 204", code)
	}
	if code, body := call(t, d, "PUT", "/api/v1/claims/u2?wait=10", claimBody(inst, "")); code != http.StatusOK || job(body).State != jobs.Running {
		t.Errorf("the waiting claim after the release = %d %s, want 200 running", code, body)
	}
	if code, body := call(t, d, "GET", "/api/v1/claims/u2", ""); code != http.StatusOK || job(body).ID != second.ID {
		t.Errorf("GET = %d %s", code, body)
	}
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		field                    string
	}{
		{"unknown claim", "GET", "/api/v1/claims/nope", "", 404, ""},
		{"bad uid", "GET", "/api/v1/claims/" + url.PathEscape("a b"), "", 400, "uid"},
		{"uid of another claim", "PUT", "/api/v1/claims/u3", `{"claim":{"uid":"u4","namespace":"ns","name":"c","instance":"` + inst + `"}}`, 400, "claim.uid"},
		{"no claim", "PUT", "/api/v1/claims/u3", `{"type":"offline"}`, 400, "claim"},
		{"unknown instance", "PUT", "/api/v1/claims/u3", claimBody("gpu9", ""), 400, "claim.instance"},
		{"a command", "PUT", "/api/v1/claims/u3", claimBody(inst, `"command":["sh"],`), 400, "command"},
		{"wait too long", "PUT", "/api/v1/claims/u3?wait=61", claimBody(inst, ""), 400, "wait"},
		{"the live claim on another instance", "PUT", "/api/v1/claims/u2", claimBody("gpu0-4g.40gb-at0", ""), 409, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, d, tc.method, tc.path, tc.body)
			var e struct{ Error, Field string }
			_ = json.Unmarshal([]byte(body), &e)
			if code != tc.code || e.Field != tc.field || e.Error == "" {
				t.Errorf("= %d %s, want %d naming %q", code, body, tc.code, tc.field)
			}
		})
	}
	if code, _ := call(t, d, "DELETE", "/api/v1/claims/u2", ""); code != http.StatusOK {
		t.Errorf("release of u2 = %d", code)
	}
}

// FuzzPrepareClaim sends arbitrary bodies and UIDs to PUT
// /api/v1/claims/UID of a real mmkd: never a 5xx, a 4xx always says why,
// and a 2xx is a claim job of that UID.
func FuzzPrepareClaim(f *testing.F) {
	for _, s := range []struct{ uid, body string }{
		{"u1", claimBody("gpu0", "")},
		{"u2", `{"type":"online","memoryMiB":1,"claim":{"namespace":"n","name":"x","instance":"gpu0","device":"p/d"}}`},
		{"u3", `{"claim":{"namespace":"N","name":"","instance":""}}`},
		{"u4", `{"claim":null}`},
		{"-", `{"command":["x"],"claim":{}}`},
		{"u5", `{`},
	} {
		f.Add(s.uid, []byte(s.body))
	}
	d := mmkdtest.Start(f, []fakegpu.GPUSpec{{Model: "H200-141GB"}})
	f.Fuzz(func(t *testing.T, uid string, body []byte) {
		code, out := call(t, d, "PUT", "/api/v1/claims/"+url.PathEscape(uid), string(body))
		switch {
		case code >= 500:
			t.Fatalf("uid %q body %q: %d %s", uid, body, code, out)
		case code >= 400:
			var e struct{ Error string }
			if json.Unmarshal([]byte(out), &e) != nil || e.Error == "" {
				t.Fatalf("uid %q body %q: %d without a message: %s", uid, body, code, out)
			}
		default:
			var j jobs.Job
			if err := json.Unmarshal([]byte(out), &j); err != nil || j.Spec.Claim == nil || j.Spec.Claim.UID != uid {
				t.Fatalf("uid %q body %q: %d %s", uid, body, code, out)
			}
			if _, _, err := d.Node.ReleaseClaim(uid); err != nil {
				t.Fatal(err)
			}
		}
	})
}
