package jobs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckWorkDir: a job's working directory must exist, be a
// directory and be one its user can enter (issue 37, item 2); the
// refusal names the field and the value.
func TestCheckWorkDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make directories of other users")
	}
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root} { // the test's own directories
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(name string, mode os.FileMode, gid int) string {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, 0, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	open := mk("open", 0o755, 0)
	private := mk("private", 0o700, 0)
	group := mk("group", 0o750, 4242)
	inner := mk("locked/inner", 0o777, 0)
	mk("locked", 0o700, 0)
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	nobody := &User{UID: 65534, GID: 65534, Groups: []uint32{65534}}
	member := &User{UID: 65534, GID: 65534, Groups: []uint32{65534, 4242}}
	tests := []struct {
		name string
		dir  string
		u    *User
		want string // in the error; "" none
	}{
		{"none given", "", nobody, ""},
		{"open", open, nobody, ""},
		{"mmkd's own user", private, nil, ""},
		{"private to root", private, nobody, "is not accessible to uid 65534"},
		{"through the group", group, member, ""},
		{"not in the group", group, nobody, "is not accessible to uid 65534"},
		{"behind a locked parent", inner, nobody, "is not accessible to uid 65534"},
		{"through a link", link, nobody, "is not accessible to uid 65534"},
		{"missing", filepath.Join(root, "nowhere"), nobody, "no such directory"},
		{"a file", file, nil, "is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckWorkDir(tt.dir, tt.u)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "workdir" || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.dir) {
				t.Errorf("error %v, want a workdir FieldError naming %s: %q", err, tt.dir, tt.want)
			}
		})
	}
}
