package jobs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// CheckWorkDir checks a job's working directory (Spec.WorkDir) before the
// job is stored: it exists, is a directory (after links) and u can enter
// it, every directory on its way searchable by u (nil: mmkd's own user).
// A refusal is a *FieldError on "workdir" naming the value, so that the
// submitter learns it at once rather than from a failed job. Root
// enters anything; access control lists are not read (the job's start
// still fails, with its reason, where one refuses).
func CheckWorkDir(dir string, u *User) error {
	if dir == "" {
		return nil
	}
	bad := func(reason string) error { return &FieldError{Field: "workdir", Value: dir, Reason: reason} }
	if !filepath.IsAbs(dir) {
		return bad("must be an absolute path")
	}
	real, err := filepath.EvalSymlinks(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return bad("no such directory")
	case errors.Is(err, fs.ErrPermission):
		return bad("is not accessible to mmkd")
	case err != nil:
		return bad(err.Error())
	}
	st, err := os.Stat(real)
	if err != nil {
		return bad(fmt.Sprintf("stat: %v", err))
	}
	if !st.IsDir() {
		return bad("is not a directory")
	}
	uid, gids := os.Geteuid(), []uint32{uint32(os.Getegid())}
	if u != nil {
		uid, gids = int(u.UID), append([]uint32{u.GID}, u.Groups...)
	}
	if uid == 0 {
		return nil
	}
	who := fmt.Sprintf("uid %d", uid)
	if u != nil && u.Name != "" {
		who = fmt.Sprintf("%s (uid %d)", u.Name, uid)
	}
	// Every directory from / to the target must be searchable.
	for p := real; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return bad(fmt.Sprintf("stat %s: %v", p, err))
		}
		if !searchable(st, uid, gids) {
			where := ""
			if p != real {
				where = " (" + p + " is not searchable)"
			}
			return bad("is not accessible to " + who + where)
		}
		if p == "/" || p == filepath.Dir(p) {
			return nil
		}
	}
}

// searchable reports whether a user of uid and groups gids may search
// (enter) the directory st by its mode bits.
func searchable(st fs.FileInfo, uid int, gids []uint32) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return true // no owner to judge by: let the start tell
	}
	mode := st.Mode().Perm()
	switch {
	case int(sys.Uid) == uid:
		return mode&0o100 != 0
	case slices.Contains(gids, sys.Gid):
		return mode&0o010 != 0
	}
	return mode&0o001 != 0
}
