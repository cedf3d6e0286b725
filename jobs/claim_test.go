package jobs

import (
	"errors"
	"strings"
	"testing"
)

// TestClaimSpec: a claim job needs a name and the claim's identity and
// instance, and may hold no process of its own; every refusal names the
// field.
func TestClaimSpec(t *testing.T) {
	good := func() Spec {
		return Spec{Name: "claim ns/c", Kind: Offline, Claim: &Claim{Namespace: "ns", Name: "c", UID: "0f1e-22", Instance: "gpu0/7g@0", Pods: []string{"ns/p"}}}
	}
	for _, tc := range []struct {
		name  string
		edit  func(*Spec)
		field string
	}{
		{"valid", func(*Spec) {}, ""},
		{"online with memory", func(s *Spec) { s.Kind, s.MemoryMiB = Online, 8192 }, ""},
		{"a command", func(s *Spec) { s.Command = []string{"sleep"} }, "command"},
		{"env", func(s *Spec) { s.Env = map[string]string{"A": "b"} }, "env"},
		{"workdir", func(s *Spec) { s.WorkDir = "/tmp" }, "workdir"},
		{"no name", func(s *Spec) { s.Name = "" }, "name"},
		{"bad namespace", func(s *Spec) { s.Claim.Namespace = "Upper" }, "claim.namespace"},
		{"bad claim name", func(s *Spec) { s.Claim.Name = "" }, "claim.name"},
		{"no uid", func(s *Spec) { s.Claim.UID = "" }, "claim.uid"},
		{"uid with a space", func(s *Spec) { s.Claim.UID = "a b" }, "claim.uid"},
		{"no instance", func(s *Spec) { s.Claim.Instance = "" }, "claim.instance"},
		{"control character in the device", func(s *Spec) { s.Claim.Device = "a\nb" }, "claim.device"},
		{"too many pods", func(s *Spec) { s.Claim.Pods = make([]string, MaxClaimPods+1) }, "claim.pods"},
		{"bad pod", func(s *Spec) { s.Claim.Pods = []string{strings.Repeat("x", 400)} }, "claim.pods[0]"},
		{"bad kind still refused", func(s *Spec) { s.Kind = "batch" }, "type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			tc.edit(&s)
			err := s.Validate()
			var fe *FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
				t.Fatalf("error %v, want one naming %s", err, tc.field)
			}
		})
	}
	// A job without a claim still needs its command.
	if err := (&Spec{Kind: Offline}).Validate(); err == nil || !strings.HasPrefix(err.Error(), "command") {
		t.Errorf("spec without command or claim: %v", err)
	}
}
