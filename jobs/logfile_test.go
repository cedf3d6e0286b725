package jobs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogWriter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max      int64
		existing string // log's content before
		writes   []string
		log      string
		log1     string // "-": no log.1
	}{
		{"under the cap", 10, "", []string{"abc", "def"}, "abcdef", "-"},
		{"exactly the cap", 6, "", []string{"abc", "def"}, "abcdef", "-"},
		{"rotates when full", 6, "", []string{"abcd", "efgh"}, "gh", "abcdef"},
		{"one write of three caps", 4, "", []string{"aaaabbbbcc"}, "cc", "bbbb"},
		{"appends to an existing log", 6, "xy", []string{"abcdef"}, "ef", "xyabcd"},
		{"no cap", 0, "", []string{strings.Repeat("a", 100)}, strings.Repeat("a", 100), "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			if tc.existing != "" {
				if err := os.WriteFile(path, []byte(tc.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			w, err := openLog(path, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
					t.Fatalf("write %q: %d %v", s, n, err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(path); err != nil || string(got) != tc.log {
				t.Fatalf("log %q %v, want %q", got, err, tc.log)
			}
			got, err := os.ReadFile(path + ".1")
			switch {
			case tc.log1 == "-" && !errors.Is(err, os.ErrNotExist):
				t.Fatalf("log.1 %q %v, want none", got, err)
			case tc.log1 != "-" && (err != nil || string(got) != tc.log1):
				t.Fatalf("log.1 %q %v, want %q", got, err, tc.log1)
			}
		})
	}
}
