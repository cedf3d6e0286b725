package web_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/web"
	"github.com/mmkgpu/mmk/web/mmkdtest"
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

// TestClaimsAreForTheDRADriver (issue 38): a claim is the DRA driver's
// to prepare, read and release: the token holder over TCP, root or
// mmkd's user over the socket. Another user of the socket is refused
// (403, saying why) on PUT, GET and DELETE, and on a job submitted with a
// claim; the claim the driver prepared stays prepared (it was released
// with 200, then "claim unprepared"), and the refused user's claim job is
// never created (it was, owned by mmkd's user).
func TestClaimsAreForTheDRADriver(t *testing.T) {
	d := mmkdtest.Start(t, []fakegpu.GPUSpec{{Model: "H200-141GB"}})
	const token, inst = "t0k", "gpu0"
	mmkdUser := jobs.Owner{UID: 1000, GID: 1000, Name: "mmk"}
	srv := web.New(web.Options{Backend: d.Backend, Node: d.Node, Token: token, TokenOwner: &mmkdUser})
	t.Cleanup(srv.Close)
	// send is a request of peer over the socket, or of the token's
	// holder over TCP (nil).
	send := func(t *testing.T, peer *web.Peer, method, path, body string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Host = "127.0.0.1:7070"
		req.Header.Set("Content-Type", "application/json")
		if peer != nil {
			req = req.WithContext(web.ContextWithPeer(req.Context(), *peer))
		} else {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	job := func(t *testing.T, body string) jobs.Job {
		t.Helper()
		var j jobs.Job
		if err := json.Unmarshal([]byte(body), &j); err != nil {
			t.Fatalf("job %q: %v", body, err)
		}
		return j
	}

	for _, tc := range []struct {
		name, uid string
		peer      *web.Peer
	}{
		{"the token holder over TCP", "u-token", nil},
		{"root over the socket", "u-root", &web.Peer{PID: 1, UID: 0, GID: 0}},
		{"mmkd's user over the socket", "u-mmkd", &web.Peer{PID: 2, UID: mmkdUser.UID, GID: mmkdUser.GID}},
	} {
		t.Run("allowed: "+tc.name, func(t *testing.T) {
			path := "/api/v1/claims/" + tc.uid
			code, body := send(t, tc.peer, "PUT", path+"?wait=10", claimBody(inst, ""))
			prepared := job(t, body)
			if code != http.StatusCreated || prepared.State != jobs.Running {
				t.Fatalf("PUT = %d %s, want 201 running", code, body)
			}
			if code, body := send(t, tc.peer, "GET", path, ""); code != http.StatusOK || job(t, body).ID != prepared.ID {
				t.Errorf("GET = %d %s, want 200 with job %s", code, body, prepared.ID)
			}
			if code, body := send(t, tc.peer, "DELETE", path, ""); code != http.StatusOK || job(t, body).State != jobs.Succeeded {
				t.Errorf("DELETE = %d %s, want 200 succeeded", code, body)
			}
		})
	}

	code, body := send(t, nil, "PUT", "/api/v1/claims/u-pod?wait=10", claimBody(inst, ""))
	pod := job(t, body)
	if code != http.StatusCreated || pod.State != jobs.Running {
		t.Fatalf("the driver's PUT = %d %s, want 201 running", code, body)
	}
	user := &web.Peer{PID: 3, UID: 1001, GID: 1001}
	for _, tc := range []struct{ name, method, path, body string }{
		{"prepare the pod's claim", "PUT", "/api/v1/claims/u-pod?wait=0", claimBody(inst, "")},
		{"prepare a claim of his own", "PUT", "/api/v1/claims/u-mine?wait=0", claimBody(inst, "")},
		{"read the pod's claim", "GET", "/api/v1/claims/u-pod", ""},
		{"release the pod's claim", "DELETE", "/api/v1/claims/u-pod", ""},
		{"submit a job of the pod's claim", "POST", "/api/v1/jobs", `{"name":"mine","type":"offline","memory":"1GiB","claim":{"uid":"u-pod","namespace":"ns","name":"c","instance":"` + inst + `"}}`},
		{"submit a job of a claim of his own", "POST", "/api/v1/jobs", `{"name":"mine","type":"offline","memory":"1GiB","claim":{"uid":"u-mine","namespace":"ns","name":"c","instance":"` + inst + `"}}`},
	} {
		t.Run("refused: another user may not "+tc.name, func(t *testing.T) {
			code, body := send(t, user, tc.method, tc.path, tc.body)
			var e struct{ Error string }
			_ = json.Unmarshal([]byte(body), &e)
			if code != http.StatusForbidden || !strings.Contains(e.Error, "DRA driver") || !strings.Contains(e.Error, "uid 1001") {
				t.Errorf("= %d %s, want 403 saying claims are the DRA driver's and naming uid 1001", code, body)
			}
		})
	}
	if j, err := d.Node.Claim("u-pod"); err != nil || j.ID != pod.ID || j.State != jobs.Running {
		t.Errorf("the pod's claim after the refusals: job %s %s (%v), want %s still running", j.ID, j.State, err, pod.ID)
	}
	if j, err := d.Node.Claim("u-mine"); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("the refused user's claim has job %s (%v), want none", j.ID, err)
	}
	if code, _ := send(t, nil, "DELETE", "/api/v1/claims/u-pod", ""); code != http.StatusOK {
		t.Errorf("the driver's DELETE = %d, want 200", code)
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
