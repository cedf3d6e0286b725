package partitioner

import (
	"strings"
	"testing"
)

func TestParseLayout(t *testing.T) {
	tests := []struct {
		model, in, want, wantErr string
	}{
		{"A100-80GB", "3g.40gb@0+2g.20gb@4+1g.10gb@6", "3g.40gb@0+2g.20gb@4+1g.10gb@6", ""},
		{"A100-80GB", " 1g.10gb@6 + 3G.40GB@0 +2g.20gb@4", "3g.40gb@0+2g.20gb@4+1g.10gb@6", ""},
		{"A100-80GB", "", "", ""},
		{"A100-80GB", "1g.10gb+me@3+3g.40gb@4", "1g.10gb+me@3+3g.40gb@4", ""},
		{"A100-80GB", "1g.10gb+me+4g.40gb", "4g.40gb@0+1g.10gb+me@4", ""},
		{"A100-80GB", "3g.40gb+3g.40gb", "3g.40gb@0+3g.40gb@4", ""},
		{"A100-80GB", "1g.10gb+3g.40gb@0", "3g.40gb@0+1g.10gb@4", ""},
		{"A100-80GB", "2g.20gb+2g.20gb+2g.20gb+1g.10gb", "2g.20gb@0+2g.20gb@2+2g.20gb@4+1g.10gb@6", ""},
		{"H200-141GB", "7g.141gb@0", "7g.141gb@0", ""},
		{"A100-80GB", "3g.40gb@0+2g.20gb@5", "", `part 2 "2g.20gb@5": 2g.20gb cannot start at memory slice 5 (allowed: 0, 2, 4)`},
		{"A100-80GB", "3g.40gb@0+1g.10gb@2", "", "1g.10gb@2 overlaps 3g.40gb@0"},
		{"A100-80GB", "3g.40gb@0+3g.41gb@4", "", `part 2 "3g.41gb@4": no profile "3g.41gb" on A100-80GB`},
		{"A100-80GB", "3g.40gb@x", "", `part 1 "3g.40gb@x": placement "x" is not a whole number`},
		{"A100-80GB", "3g.40gb@0++1g.10gb@4", "", `part 2 "": empty instance`},
		{"A100-80GB", "3g.40gb@0+4g.40gb", "", `no free placements fit 4g.40gb beside "3g.40gb@0"`},
		{"A100-80GB", "1g.10gb@1+3g.40gb+3g.40gb", "", "no free placements fit 3g.40gb+3g.40gb"},
		{"A100-80GB", "1g.10gb+me@0+1g.10gb+me@1", "", "more than 1 instances of 1g.10gb+me"},
		{"A100-80GB", "1g.10gb+me+1g.10gb+me", "", "more than 1 instances of 1g.10gb+me"},
		{"A100-80GB", "4g.40gb+4g.40gb", "", "more than 1 instances of 4g.40gb"},
		{"A100-80GB", "4g.40gb+2g.20gb+2g.20gb", "", "layout uses 8 compute slices, the GPU has 7"},
		{"A100-80GB", strings.Repeat("1g.10gb+", 8) + "1g.10gb", "", "9 instances, but at most 7 fit"},
		{"A100-40GB", "1g.10gb@5", "", "1g.10gb cannot start at memory slice 5 (allowed: 0, 2, 4, 6)"},
		{"A100-40GB", "1g.5gb@6+1g.10gb", "1g.10gb@0+1g.5gb@6", ""},
	}
	for _, tt := range tests {
		m, err := LookupModel(tt.model)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ParseLayout(m, tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseLayout(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseLayout(%q): %v", tt.in, err)
			continue
		}
		if got := l.String(); got != tt.want {
			t.Errorf("ParseLayout(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLayoutJSON(t *testing.T) {
	m, _ := LookupModel("H100-80GB")
	l, err := ParseLayout(m, "4g.40gb@0+2g.20gb@4+1g.10gb@6")
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"layout":"4g.40gb@0+2g.20gb@4+1g.10gb@6","instances":[{"profile":"4g.40gb","start":0,"size":4},{"profile":"2g.20gb","start":4,"size":2},{"profile":"1g.10gb","start":6,"size":1}]}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
}

// FuzzParseLayout checks that the parser never panics and that whatever it
// accepts is a valid layout whose canonical text parses back to itself.
func FuzzParseLayout(f *testing.F) {
	for _, s := range []string{
		"3g.40gb@0+2g.20gb@4+1g.10gb@6", "1g.10gb+me@3", "7g.80gb", "", "+", "@", "1g.10gb@-1",
		"3g.40gb+3g.40gb", "2g.20gb@99999999999999999999", "1g.10gb+me+me", " + 4g.40gb@0 ",
	} {
		f.Add("H100-80GB", s)
	}
	f.Fuzz(func(t *testing.T, key, text string) {
		m, err := LookupModel(key)
		if err != nil {
			m, _ = LookupModel("H100-80GB")
		}
		l, err := ParseLayout(m, text)
		if err != nil {
			return
		}
		if _, err := NewLayout(m, l.Instances); err != nil {
			t.Fatalf("ParseLayout(%q) accepted an invalid layout %q: %v", text, l, err)
		}
		again, err := ParseLayout(m, l.String())
		if err != nil {
			t.Fatalf("canonical text %q of %q does not parse: %v", l, text, err)
		}
		if !again.Equal(l) || again.String() != l.String() {
			t.Fatalf("round trip of %q: %q != %q", text, again, l)
		}
	})
}
