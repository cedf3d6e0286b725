package jobs

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// ErrForbidden is a request the caller may not make: a job to run as a
// user mmkd may not run jobs as (root, unless allowed; another user
// while mmkd is not root), or a job of another user to cancel.
var ErrForbidden = errors.New("forbidden")

// Owner is the user a job runs as: the caller that submitted it, as the
// kernel names it (SO_PEERCRED on mmkd's Unix socket), or mmkd's own user
// for a caller that showed mmkd's token.
type Owner struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Name is the user's login name where the system knows it.
	Name string `json:"name,omitempty"`
}

// Self is mmkd's own user.
func Self() Owner {
	return NamedOwner(os.Geteuid(), os.Getegid())
}

// NamedOwner is the owner of a uid and gid, with the user's name where
// the system knows it.
func NamedOwner(uid, gid int) Owner {
	o := Owner{UID: uid, GID: gid}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		o.Name = u.Username
	}
	return o
}

// String names the owner for messages: "alice (uid 1000)".
func (o Owner) String() string {
	if o.Name != "" {
		return fmt.Sprintf("%s (uid %d)", o.Name, o.UID)
	}
	return fmt.Sprintf("uid %d", o.UID)
}

// User is what the shim needs to run a job as another user: the ids, the
// supplementary groups and the user's home, name and shell for the
// job's environment.
type User struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
	Name   string   `json:"name,omitempty"`
	Home   string   `json:"home,omitempty"`
}

// LookupUser completes an owner into the User a job runs as: its
// supplementary groups and home from the system's user database. A uid
// the database lacks runs with its gid as only group and / as home.
func LookupUser(o Owner) (*User, error) {
	if o.UID < 0 || o.GID < 0 || o.UID > 1<<31 || o.GID > 1<<31 {
		return nil, fmt.Errorf("owner %s: uid and gid must be 0 to 2^31 (gid %d)", o, o.GID)
	}
	u := &User{UID: uint32(o.UID), GID: uint32(o.GID), Groups: []uint32{uint32(o.GID)}, Name: o.Name, Home: "/"}
	pw, err := user.LookupId(strconv.Itoa(o.UID))
	if err != nil {
		var unknown user.UnknownUserIdError
		if errors.As(err, &unknown) {
			return u, nil
		}
		return nil, fmt.Errorf("look up %s: %w", o, err)
	}
	u.Name, u.Home = pw.Username, pw.HomeDir
	gids, err := pw.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("groups of %s: %w", o, err)
	}
	for _, g := range gids {
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			continue
		}
		if !slices.Contains(u.Groups, uint32(n)) {
			u.Groups = append(u.Groups, uint32(n))
		}
	}
	return u, nil
}

// credential is how the shim starts the job as u: setgroups, setgid,
// setuid in the child before exec (nil: as the shim's own user).
func (u *User) credential() *syscall.Credential {
	if u == nil {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
}

// Env sets the variables that name the user (HOME, USER, LOGNAME) in a
// job's environment, where mmkd's own would name mmkd's user; a variable
// the job's spec set (spec) is left as it is.
func (u *User) Env(env []string, spec map[string]string) []string {
	if u == nil {
		return env
	}
	set := map[string]string{"HOME": u.Home}
	if u.Name != "" {
		set["USER"], set["LOGNAME"] = u.Name, u.Name
	}
	for k := range spec {
		delete(set, k)
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := set[k]; !ours {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"HOME", "USER", "LOGNAME"} {
		if v, ok := set[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// shareWithUser lets a job run as u reach its checkpoint directory: the
// job's directory and the runner's root become traversable (0711: the
// user can pass through but neither list them nor change mmkd's records)
// and the checkpoint directory the user's own.
func shareWithUser(dir, ckpt string, u *User) error {
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			return fmt.Errorf("job directory for uid %d: %w", u.UID, err)
		}
	}
	if err := os.Chown(ckpt, int(u.UID), int(u.GID)); err != nil {
		return fmt.Errorf("checkpoint directory for uid %d: %w", u.UID, err)
	}
	return nil
}
