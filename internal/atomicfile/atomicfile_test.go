package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	for _, content := range []string{"first", "second"} {
		if err := Write(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d files left in the directory, want 1", len(entries))
	}
	if err := Write(filepath.Join(dir, "missing", "f"), nil); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}

func TestWriteFunc(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.db")
	// 0640 is not os.CreateTemp's 0600: the mode must be set, not inherited.
	for _, tc := range []struct {
		content string
		perm    os.FileMode
	}{{"first", 0o640}, {"second", 0o600}} {
		err := WriteFunc(path, tc.perm, func(w io.Writer) error {
			_, err := io.WriteString(w, tc.content)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != tc.content {
			t.Fatalf("read %q, %v; want %q", got, err, tc.content)
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != tc.perm {
			t.Fatalf("mode %v, %v; want %v", st.Mode().Perm(), err, tc.perm)
		}
	}
	failed := errors.New("failed")
	err := WriteFunc(path, 0o600, func(w io.Writer) error {
		io.WriteString(w, "torn")
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("got %v, want the writer's error", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "second" {
		t.Fatalf("after a failed write the file holds %q, want the old %q", got, "second")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d files left in the directory, want 1", len(entries))
	}
}
