package node

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/mmkgpu/mmk/jobs"
)

// mayRunAs says whether the node may run jobs as owner (MayRunAs).
func (n *Node) mayRunAs(owner jobs.Owner) error { return MayRunAs(owner, n.cfg.AllowRoot) }

// MayRunAs is nil when the node runs jobs as owner, else the refusal
// (wrapping jobs.ErrForbidden) that a submission of owner's gets.
func (n *Node) MayRunAs(owner jobs.Owner) error { return n.mayRunAs(owner) }

// MayRunAs says whether an mmkd may run jobs as owner: root only with
// allowRoot (jobs.allow_root), and a user other than mmkd's own only when
// mmkd runs as root (it cannot switch users otherwise). A refusal wraps
// jobs.ErrForbidden.
func MayRunAs(owner jobs.Owner, allowRoot bool) error {
	if owner.UID == 0 && !allowRoot {
		return fmt.Errorf("%w: jobs do not run as root on this mmkd (jobs.allow_root is off): submit as another user", jobs.ErrForbidden)
	}
	if self := os.Geteuid(); self != 0 && owner.UID != self {
		return fmt.Errorf("%w: this mmkd runs as uid %d and runs jobs only as itself, not as %s", jobs.ErrForbidden, self, owner)
	}
	return nil
}

// CheckWorkDir checks a spec's working directory for the job's owner:
// an existing directory the user the job runs as (runAs) can enter
// (jobs.CheckWorkDir). A refusal is a *jobs.FieldError on "workdir".
func CheckWorkDir(spec jobs.Spec, owner jobs.Owner) error {
	if spec.WorkDir == "" {
		return nil
	}
	u, err := runAs(&jobs.Job{Owner: &owner})
	if err != nil {
		return fmt.Errorf("check workdir: %w", err)
	}
	return jobs.CheckWorkDir(spec.WorkDir, u)
}

// runAs is the user a job's shim starts it as: nil for mmkd's own user
// (or a job from before owners were recorded), else its owner with the
// user's groups and home.
func runAs(j *jobs.Job) (*jobs.User, error) {
	o := j.Owner
	if o == nil || (o.UID == os.Geteuid() && o.GID == os.Getegid()) {
		return nil, nil
	}
	return jobs.LookupUser(*o)
}

// checkOwnerAtStart says whether a job may start now as the owner its
// record names (nil: mmkd's own user, for a job of an mmk that did not
// record owners): MayRunAs with jobs.allow_root as configured now, not
// as it was at submission; and a user other than mmkd's own must be a
// user of this system with the name recorded. A record damaged into
// another uid (issue 54: "uid" read as "ukd" made a job root's) or a
// user deleted since is refused instead of run.
func checkOwnerAtStart(o *jobs.Owner, allowRoot bool) error {
	if o == nil {
		self := jobs.Self()
		o = &self
	}
	if err := MayRunAs(*o, allowRoot); err != nil {
		return err
	}
	if o.UID == os.Geteuid() {
		return nil
	}
	u, err := user.LookupId(strconv.Itoa(o.UID))
	var unknown user.UnknownUserIdError
	switch {
	case errors.As(err, &unknown):
		return fmt.Errorf("%w: uid %d is not a user of this system", jobs.ErrForbidden, o.UID)
	case err != nil:
		return fmt.Errorf("look up uid %d: %w", o.UID, err)
	case o.Name != "" && u.Username != o.Name:
		return fmt.Errorf("%w: uid %d is %s on this system, the job's owner was recorded as %s", jobs.ErrForbidden, o.UID, u.Username, o.Name)
	}
	return nil
}
