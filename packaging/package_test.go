// Package packaging holds the tests of the mmk .deb: they build it with
// build-deb.sh from stand-in binaries and read what it installs.
package packaging

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/configs"
)

// buildDeb builds the package with build-deb.sh from stand-ins for the
// binaries (the scripts, the unit, the configuration and the documents
// are the real ones) and unpacks it, maintainer scripts included, into
// a directory it returns. It skips the test where dpkg-deb is missing.
func buildDeb(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"dpkg", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	const version = "0.0~test"
	bin := standIns(t, version)
	out, err := exec.Command("./build-deb.sh", version, bin).CombinedOutput()
	if err != nil {
		t.Fatalf("build-deb.sh: %v\n%s", err, out)
	}
	deb := strings.TrimSpace(string(out))
	root := filepath.Join(t.TempDir(), "root")
	if out, err := exec.Command("dpkg-deb", "--raw-extract", deb, root).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --raw-extract %s: %v\n%s", deb, err, out)
	}
	return root
}

// standIns writes stand-ins for make build's binaries into a directory it
// returns: mmkd and mmk-dra print their version, mmkctl a completion
// script.
func standIns(t *testing.T, version string) string {
	t.Helper()
	bin := t.TempDir()
	for name, text := range map[string]string{
		"mmkd":          "#!/bin/sh\necho 'mmkd version " + version + "'\n",
		"mmk-dra":       "#!/bin/sh\necho 'mmk-dra version " + version + "'\n",
		"mmkctl":        "#!/bin/sh\n[ \"$1\" = completion ] && echo \"# $2 completion of mmkctl\"\n",
		"libmmkhook.so": "",
		"mmk-tpcprobe":  "",
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// readFile is a file of the unpacked package.
func readFile(t *testing.T, root, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatalf("the package: %v", err)
	}
	return string(b)
}

// perm is a file's mode and owners, as the model of the node sees it.
type perm struct {
	mode         os.FileMode
	owner, group string
}

// account is a local user: its name and its groups.
type account struct {
	name   string
	groups []string
}

// may reports whether a (not root) may do what bit asks (4 read, 2
// write, 1 search or execute) on a file of p, as the kernel decides:
// the owner's bits, else the group's, else the others'.
func (a account) may(p perm, bit os.FileMode) bool {
	switch {
	case a.name == p.owner:
		return p.mode&(bit<<6) != 0
	case containsString(a.groups, p.group):
		return p.mode&(bit<<3) != 0
	}
	return p.mode&bit != 0
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// unitDirectives are the [Service] directives of a unit file.
func unitDirectives(unit string) map[string]string {
	d := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(unit))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			d[k] = v
		}
	}
	return d
}

// installDir matches the postinst's `install -d -m MODE -o USER -g GROUP DIR`.
var installDir = regexp.MustCompile(`install -d -m (0[0-7]{3}) -o (\S+) -g (\S+) (/\S+)`)

// directoryPerms are the directories the package sets up, as they are
// once mmkd.service has started: the postinst's `install -d`, then the
// unit's StateDirectory= and RuntimeDirectory=, which systemd makes, or
// makes again, at each start, owned by the unit's User= and Group=
// (root without them) at their *DirectoryMode= (0755 without one).
func directoryPerms(t *testing.T, unit, postinst string) map[string]perm {
	t.Helper()
	dirs := map[string]perm{}
	for _, m := range installDir.FindAllStringSubmatch(postinst, -1) {
		mode, err := strconv.ParseUint(m[1], 8, 32)
		if err != nil {
			t.Fatal(err)
		}
		dirs[m[4]] = perm{os.FileMode(mode), m[2], m[3]}
	}
	d := unitDirectives(unit)
	user, group := d["User"], d["Group"]
	if user == "" {
		user = "root"
	}
	if group == "" {
		group = user
	}
	for kind, base := range map[string]string{"State": "/var/lib", "Runtime": "/run"} {
		names := d[kind+"Directory"]
		if names == "" {
			continue
		}
		mode := uint64(0o755)
		if m := d[kind+"DirectoryMode"]; m != "" {
			var err error
			if mode, err = strconv.ParseUint(m, 8, 32); err != nil {
				t.Fatalf("%sDirectoryMode=%s: %v", kind, m, err)
			}
		}
		for _, name := range strings.Fields(names) {
			dirs[filepath.Join(base, name)] = perm{os.FileMode(mode), user, group}
		}
	}
	return dirs
}

// socketMode is the mode mmkd gives its socket (cmd/mmkd, socketMode).
const socketMode = 0o660

// packagedSocket is mmkd's socket under the package's /etc/mmk/mmk.yaml:
// mmkd.sock in its data_dir. mmkd's rule (cmd/internal/cli.SocketPath)
// is out of this package's reach; cmd/internal/cli's TestPackagedSocket
// holds the rule to this path.
const packagedSocket = "/var/lib/mmk/mmkd.sock"

// TestSocketReachableByGroup builds the package and follows, from its
// unit, its postinst and its /etc/mmk/mmk.yaml, the path to mmkd's
// socket as a member of server.socket_group and as another user: the
// member must search every directory on the way and write the socket,
// the other user must not connect. The group must be one the postinst
// makes, and the configuration and the README must tell the operator to
// add users to it.
func TestSocketReachableByGroup(t *testing.T) {
	root := buildDeb(t)
	unit := readFile(t, root, "lib/systemd/system/mmkd.service")
	postinst := readFile(t, root, "DEBIAN/postinst")
	yaml := readFile(t, root, "etc/mmk/mmk.yaml")
	cfg, err := configs.Load(configs.Options{File: filepath.Join(root, "etc/mmk/mmk.yaml")})
	if err != nil {
		t.Fatalf("the package's /etc/mmk/mmk.yaml: %v", err)
	}
	sock := packagedSocket
	group := cfg.Server.SocketGroup
	if group == "" {
		t.Fatalf("the package's /etc/mmk/mmk.yaml sets no server.socket_group: only root may connect to %s, and root's jobs are refused", sock)
	}
	if !strings.Contains(postinst, "groupadd --system "+group) {
		t.Errorf("the postinst does not make the group %s (server.socket_group)", group)
	}
	howTo := "usermod -aG " + group
	for _, doc := range []string{"etc/mmk/mmk.yaml", "usr/share/doc/mmk/README.md"} {
		if !strings.Contains(readFile(t, root, doc), howTo) {
			t.Errorf("/%s does not say how to let a user submit (%s USER)", doc, howTo)
		}
	}
	if !strings.Contains(yaml, "socket_group: "+group) {
		t.Errorf("/etc/mmk/mmk.yaml does not show socket_group: %s", group)
	}

	dirs := directoryPerms(t, unit, postinst)
	member := account{name: "alice", groups: []string{"alice", group}}
	outsider := account{name: "bob", groups: []string{"bob", "users"}}
	reach := func(a account) error {
		for dir := filepath.Dir(sock); ; dir = filepath.Dir(dir) {
			p, ok := dirs[dir]
			if !ok {
				p = perm{0o755, "root", "root"} // Debian's /, /var, /var/lib, /run
			}
			if !a.may(p, 1) {
				return fmt.Errorf("cannot search %s (%#o %s:%s)", dir, p.mode, p.owner, p.group)
			}
			if dir == "/" {
				break
			}
		}
		s := perm{socketMode, "root", group}
		if !a.may(s, 2) {
			return fmt.Errorf("cannot connect to %s (%#o %s:%s)", sock, s.mode, s.owner, s.group)
		}
		return nil
	}
	if err := reach(member); err != nil {
		t.Errorf("a member of %s %v", group, err)
	}
	if err := reach(outsider); err == nil {
		t.Errorf("a user outside %s reaches %s", group, sock)
	}
}
