// Package jobs is mmk's job model: what a user submits (Spec), a job's
// life (State and the transitions allowed between states), the durable
// store every transition is written to before it is acted on (Store, on
// bbolt), and the process runner that starts each job under a small
// supervisor that outlives mmkd (Runner, ShimMain).
//
// # Store
//
// The store is an embedded bbolt database (go.etcd.io/bbolt): a single
// file, a copy-on-write B+tree whose commits are fsynced, so that a crash
// leaves either the old or the new state, never a torn one. It was chosen
// over a pure-Go SQLite because mmk needs keyed records and ordered scans,
// not SQL, and bbolt is small, pure Go, widely used (etcd, containerd's
// metadata store) and needs no cgo; its Batch coalesces concurrent
// submissions into one fsync. The schema version lives in the meta bucket;
// a database written by a newer mmk is refused.
//
// Records are JSON with a checksum line (codec.go), written by
// encoding/json. A start reads every one of them, strictly, with
// internal/jsonread: encoding/json's semantics in half its time.
//
// # States
//
//	pending ──> placed ──> running ──> succeeded | failed | cancelled
//	   │          │           │
//	   │          │           └──> restarting ──> placed | pending
//	   └──────────┴──> cancelled | failed (never started)
//
// A job moves to restarting when a reconfiguration moves it: it is sent
// SIGTERM (see Runner for the checkpoint contract) and placed again.
//
// A claim job (Spec.Claim, claim.go) stands for a Kubernetes
// ResourceClaim: it has no command, goes from placed to running with a
// Grant instead of a process, and ends (succeeded) when its claim is
// released.
package jobs
