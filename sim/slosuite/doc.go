// Package slosuite is the latency controller's scenario suite (issue
// 52): scenarios drawn from a GPU's calibration (bench/gpu/calibrate.py:
// each service's service times and the trainers' speed under each rung
// and static setting beside each trainer mix), fixed in two seeded
// splits before any tuning, each run through a queue model under every
// static setting a user could pick and under the real slo.Controller,
// on the same requests, and scored as the issue asks: per segment,
// whether the controller holds the targets where some static setting
// does, and its trainers' speed against the fastest static setting that
// held every segment.
//
// The controller is tuned on the Tune split only; HeldOut, which alone
// draws from one calibrated mix, is reported beside it and never tuned
// against. `mmkctl sim slo` prints the table and writes the plot.
package slosuite
