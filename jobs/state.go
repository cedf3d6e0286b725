package jobs

import (
	"fmt"
	"slices"
)

// State is where a job is in its life.
type State string

// The states of a job.
const (
	Pending    State = "pending"    // waiting to be placed
	Placed     State = "placed"     // has a GPU instance and MPS share, not started yet
	Running    State = "running"    // its process runs
	Restarting State = "restarting" // stopped by a reconfiguration, to be placed again
	Succeeded  State = "succeeded"  // exited with status 0
	Failed     State = "failed"     // exited otherwise, or could not start
	Cancelled  State = "cancelled"  // cancelled by a user
)

// States lists every state in life order.
func States() []State {
	return []State{Pending, Placed, Running, Restarting, Succeeded, Failed, Cancelled}
}

// transitions are the moves allowed from each state.
var transitions = map[State][]State{
	Pending: {Placed, Cancelled, Failed},
	// A placed job may end without being seen running (mmkd stopped
	// between its start and the record of it); a restarting one may end
	// on its own just before the stop reached it.
	Placed:     {Running, Pending, Succeeded, Cancelled, Failed},
	Running:    {Succeeded, Failed, Cancelled, Restarting},
	Restarting: {Placed, Pending, Succeeded, Cancelled, Failed},
}

// Terminal reports a state a job never leaves.
func (s State) Terminal() bool {
	return s == Succeeded || s == Failed || s == Cancelled
}

// Valid reports a known state.
func (s State) Valid() bool { return slices.Contains(States(), s) }

// CanMove reports whether a job may go from s to to.
func (s State) CanMove(to State) bool { return slices.Contains(transitions[s], to) }

// TransitionError is a move the state machine does not allow.
type TransitionError struct {
	ID       string
	From, To State
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("job %s: cannot go from %s to %s", e.ID, e.From, e.To)
}

// ParseState reads a state name.
func ParseState(s string) (State, error) {
	st := State(s)
	if !st.Valid() {
		return "", fmt.Errorf("state %q is not one of %v", s, States())
	}
	return st, nil
}
