// Package jsonread reads JSON as encoding/json (v1) does, values and
// errors alike, in about half its time: with the JSON v2 prototype
// (github.com/go-json-experiment/json, by the Go team, from which
// encoding/json/v2 is made; Go 1.26 offers that only behind
// GOEXPERIMENT=jsonv2) set to v1's semantics. It reads no input twice
// (v1 scans a value's syntax before it decodes it) and allocates a
// third as often. mmkd reads its whole store, and its predictor's
// cache, at every start: that is where it is used. What mmk writes,
// it writes with encoding/json.
//
// One difference is known (FuzzAsEncodingJSON found it): a field tagged
// ",string" takes "+0", which encoding/json refuses. The types read
// here have none (jobs' TestStrictCoversRecordTypes fails on one).
//
// When encoding/json/v2 is in Go without an experiment, this package's
// import becomes that one.
package jsonread

import (
	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

var (
	v1      = jsonv1.DefaultOptionsV1()
	v1Known = jsonv2.JoinOptions(v1, jsonv2.RejectUnknownMembers(true))
)

// Unmarshal is encoding/json.Unmarshal.
func Unmarshal(data []byte, dst any) error {
	return jsonv2.Unmarshal(data, dst, v1)
}

// UnmarshalKnown is encoding/json's Decoder with DisallowUnknownFields,
// decoding data, which must hold one value and nothing after it.
func UnmarshalKnown(data []byte, dst any) error {
	return jsonv2.Unmarshal(data, dst, v1Known)
}

// SyntaxError is the error of input that is not JSON (as
// encoding/json's SyntaxError is).
type SyntaxError = jsonv1.SyntaxError
