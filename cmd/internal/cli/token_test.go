package cli

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/configs"
)

// TestServerTokenFile (issue 38, token hygiene): mmkd uses a token file
// only if it is its own user's and no one else's to read. A file that
// others may read is made 0600 with a warning naming it and its old mode;
// one of another user, or a symbolic link, stops mmkd with an error
// naming the file, its owner and its mode, and is left as it was. The
// data directory is 0777, as in the finding.
func TestServerTokenFile(t *testing.T) {
	const tok = "0123456789abcdef0123"
	const nobody = 65534
	tests := []struct {
		name string
		// setup prepares path (the token file) in a 0777 directory.
		setup     func(t *testing.T, path string)
		configTok string
		asRoot    bool        // needs root (to give the file away)
		want      string      // the token; "" : an error
		wantMode  os.FileMode // the file's mode afterwards; 0: no file
		wantWarn  []string    // in the log; nil: nothing logged
		wantErr   []string    // in the error
	}{
		{name: "missing: made 0600", setup: func(*testing.T, string) {}, wantMode: 0o600},
		{name: "own 0600: used", setup: writeToken(tok, 0o600, -1), want: tok, wantMode: 0o600},
		{name: "own 0644: made 0600, warned", setup: writeToken(tok, 0o644, -1), want: tok, wantMode: 0o600,
			wantWarn: []string{"level=WARN", "token", "0644", "0600"}},
		{name: "own 0640: made 0600, warned", setup: writeToken(tok, 0o640, -1), want: tok, wantMode: 0o600,
			wantWarn: []string{"level=WARN", "0640"}},
		{name: "own 0602: made 0600, warned", setup: writeToken(tok, 0o602, -1), want: tok, wantMode: 0o600,
			wantWarn: []string{"level=WARN", "0602"}},
		{name: "another user's 0644: refused", setup: writeToken(tok, 0o644, nobody), asRoot: true, wantMode: 0o644,
			wantErr: []string{"token", "65534", "0644"}},
		{name: "another user's 0600: refused", setup: writeToken(tok, 0o600, nobody), asRoot: true, wantMode: 0o600,
			wantErr: []string{"token", "65534", "0600"}},
		{name: "a symbolic link: refused", setup: func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			writeToken(tok, 0o644, -1)(t, target)
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}, wantErr: []string{"token", "symbolic link"}},
		{name: "empty: refused", setup: writeToken("", 0o600, -1), wantMode: 0o600, wantErr: []string{"token", "empty"}},
		{name: "server.token set: the file is not read", setup: writeToken(tok, 0o644, -1),
			configTok: "configured-token-0123", want: "configured-token-0123", wantMode: 0o644},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.asRoot && os.Geteuid() != 0 {
				t.Skip("needs root to give a file to another user")
			}
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, TokenName)
			tc.setup(t, path)
			var logged bytes.Buffer
			c := &configs.Config{DataDir: dir}
			c.Server.Token = tc.configTok
			got, err := ServerToken(c, slog.New(slog.NewTextHandler(&logged, nil)))
			switch {
			case tc.wantErr != nil:
				if err == nil {
					t.Errorf("token %q, want an error with %q", got, tc.wantErr)
				}
				for _, s := range tc.wantErr {
					if err != nil && !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				if err != nil && strings.Contains(err.Error(), tok) {
					t.Errorf("error %q shows the token", err)
				}
			case err != nil:
				t.Fatalf("error %v", err)
			case tc.want == "" && !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(got):
				t.Errorf("made token %q, want 32 random bytes in hex", got)
			case tc.want != "" && got != tc.want:
				t.Errorf("token %q, want %q", got, tc.want)
			}
			if tc.wantMode != 0 {
				st, err := os.Lstat(path)
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != tc.wantMode {
					t.Errorf("token file mode %#o, want %#o", st.Mode().Perm(), tc.wantMode)
				}
			}
			if tc.wantWarn == nil && logged.Len() > 0 {
				t.Errorf("logged %q, want nothing", logged.String())
			}
			for _, s := range tc.wantWarn {
				if !strings.Contains(logged.String(), s) {
					t.Errorf("log %q does not say %q", logged.String(), s)
				}
			}
			if len(tc.wantWarn) > 0 && !strings.Contains(logged.String(), path) {
				t.Errorf("log %q does not name the file %s", logged.String(), path)
			}
			if strings.Contains(logged.String(), tok) {
				t.Errorf("log %q shows the token", logged.String())
			}
		})
	}
}

// writeToken writes tok to a file of the given mode, owned by uid (-1:
// the test's own).
func writeToken(tok string, mode os.FileMode, uid int) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if uid >= 0 {
			if err := os.Chown(path, uid, uid); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestTokenFile: the file the dashboard's sign-in names is the data
// directory's token file as an absolute path, and none where the token
// is the configuration's.
func TestTokenFile(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dataDir, token, want string
	}{
		{"absolute data directory", "/var/lib/mmk", "", "/var/lib/mmk/token"},
		{"relative data directory", ".run", "", filepath.Join(wd, ".run", "token")},
		{"the configuration's token", "/var/lib/mmk", "0123456789abcdef0123", ""},
	}
	for _, tt := range tests {
		c := &configs.Config{DataDir: tt.dataDir}
		c.Server.Token = tt.token
		got, err := TokenFile(c)
		if err != nil || got != tt.want {
			t.Errorf("%s: %q %v, want %q", tt.name, got, err, tt.want)
		}
	}
}
