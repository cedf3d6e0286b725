package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/mmkgpu/mmk/jobs"
)

// decodeJSON reads the request body into v, strictly: one JSON value,
// no field v lacks, sent as application/json. With optional set, an
// empty body leaves v as it is.
//
// Requiring the JSON media type is what keeps a web page from posting a
// job to a daemon on the same machine: browsers send other types without
// asking the server first (CORS "simple requests"), never this one.
func decodeJSON(c *gin.Context, v any, optional bool) error {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return tooLarge(mbe.Limit)
		}
		return badRequest("", "read the request body: %v", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		if optional {
			return nil
		}
		return badRequest("", "the request body is empty: send a JSON object")
	}
	if mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type")); err != nil || mt != "application/json" {
		return &apiError{Status: http.StatusUnsupportedMediaType, Field: "Content-Type",
			Message: fmt.Sprintf("Content-Type %q: send the body as application/json", c.GetHeader("Content-Type"))}
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("", "the request body holds more than one JSON value")
	}
	return nil
}

// jsonError turns a decoding error into a 400 naming the field at fault
// where encoding/json says which.
func jsonError(err error) error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return badRequest("", "the request body is not JSON: %v (at byte %d)", se, se.Offset)
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		// encoding/json names the fields of an embedded struct after it
		// (submitRequest's Spec); the client never saw that name.
		field := strings.TrimPrefix(te.Field, "Spec.")
		if field == "" {
			return badRequest("", "the request body must be a JSON object, not %s", te.Value)
		}
		return badRequest(field, "%s: must be %s, not %s", field, jsonType(te.Type.Kind().String()), te.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field, uerr := strconv.Unquote(name)
		if uerr != nil {
			field = name
		}
		return badRequest(field, "unknown field %q", field)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return badRequest("", "the request body is not JSON: it ends early")
	}
	return badRequest("", "the request body is not valid: %v", err)
}

// jsonType names a Go kind the way a JSON user thinks of it.
func jsonType(kind string) string {
	switch kind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return kind
}

// query returns the request's query parameters, refusing any not named
// in allowed and any given twice (a misspelt filter must not silently
// select everything).
func query(c *gin.Context, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(c.Request.URL.RawQuery)
	if err != nil {
		return nil, badRequest("", "malformed query string: %v", err)
	}
	for name, vs := range q {
		if !slices.Contains(allowed, name) {
			return nil, badRequest(name, "unknown query parameter %q (known: %s)", name, strings.Join(allowed, ", "))
		}
		if len(vs) > 1 {
			return nil, badRequest(name, "query parameter %q is given %d times", name, len(vs))
		}
	}
	return q, nil
}

// intParam reads an integer query parameter in [lo, hi]; absent, it is
// def.
func intParam(q url.Values, name string, lo, hi, def int64) (int64, error) {
	if !q.Has(name) {
		return def, nil
	}
	v, err := strconv.ParseInt(q.Get(name), 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, badRequest(name, "%s must be an integer from %d to %d, not %q", name, lo, hi, q.Get(name))
	}
	return v, nil
}

// boolParam reads a boolean query parameter (1, true, 0, false; present
// without a value is true).
func boolParam(q url.Values, name string) (bool, error) {
	if !q.Has(name) {
		return false, nil
	}
	switch strings.ToLower(q.Get(name)) {
	case "", "1", "true", "yes":
		return true, nil
	case "0", "false", "no":
		return false, nil
	}
	return false, badRequest(name, "%s must be 1 or 0 (true or false), not %q", name, q.Get(name))
}

// jobID returns the :id path parameter, refusing what cannot be a job id.
func jobID(c *gin.Context) (string, error) {
	id := c.Param("id")
	if !jobs.ValidID(id) {
		return "", badRequest("id", "%q is not a job id (16 characters of 0-9 and a-z without i, l, o, u)", truncate(id, 40))
	}
	return id, nil
}

// truncate shortens s for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
