package cli

import (
	"path/filepath"
	"testing"

	"github.com/mmkgpu/mmk/configs"
)

// TestPackagedSocket: under the .deb's /etc/mmk/mmk.yaml
// (packaging/mmk.yaml), mmkd's socket is /var/lib/mmk/mmkd.sock, the path
// packaging's TestSocketReachableByGroup follows through the unit's and
// the postinst's directories (packagedSocket there: this package is out
// of its reach).
func TestPackagedSocket(t *testing.T) {
	file := filepath.Join("..", "..", "..", "packaging", "mmk.yaml")
	c, err := configs.Load(configs.Options{File: file})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	got, err := SocketPath(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := "/var/lib/mmk/mmkd.sock"; got != want {
		t.Errorf("mmkd's socket under %s is %s, packaging's TestSocketReachableByGroup follows %s", file, got, want)
	}
}
