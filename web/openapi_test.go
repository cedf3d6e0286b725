package web

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// openAPIDocument is the part of an OpenAPI 3 document the tests read.
type openAPIDocument struct {
	OpenAPI string                                `json:"openapi"`
	Paths   map[string]map[string]json.RawMessage `json:"paths"`
}

// TestOpenAPIMatchesRoutes holds openapi.json to the routes New
// registers, both ways, so that the document cannot drift from the API.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc openAPIDocument
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi %q, want 3.x", doc.OpenAPI)
	}
	param := regexp.MustCompile(`[:*]([A-Za-z]+)`)
	var routes []string
	for _, r := range newTestServer(t).engine.Routes() {
		routes = append(routes, r.Method+" "+param.ReplaceAllString(r.Path, "{$1}"))
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, r := range routes {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not in openapi.json", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routes, d) {
			t.Errorf("openapi.json documents %s, which is not a route", d)
		}
	}
	if len(routes) < 15 {
		t.Errorf("only %d routes: %v", len(routes), routes)
	}
}

// TestOpenAPIRefsResolve checks that every $ref of the document names a
// component it defines, and that every operation has an id and answers.
func TestOpenAPIRefsResolve(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "$ref" {
					ref, _ := x.(string)
					if resolve(doc, ref) == nil {
						t.Errorf("%s: $ref %q does not resolve", at, ref)
					}
					continue
				}
				walk(x, at+"/"+k)
			}
		case []any:
			for _, x := range v {
				walk(x, at)
			}
		}
	}
	walk(doc, "#")
	ids := map[string]bool{}
	for path, ops := range doc["paths"].(map[string]any) {
		for method, op := range ops.(map[string]any) {
			o := op.(map[string]any)
			id, _ := o["operationId"].(string)
			if id == "" || ids[id] {
				t.Errorf("%s %s: operationId %q missing or repeated", method, path, id)
			}
			ids[id] = true
			if resp, _ := o["responses"].(map[string]any); len(resp) == 0 {
				t.Errorf("%s %s has no responses", method, path)
			}
		}
	}
}

func resolve(doc map[string]any, ref string) any {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var v any = doc
	for _, part := range strings.Split(rest, "/") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	return v
}

func TestOpenAPIServed(t *testing.T) {
	r := newTestServer(t).do(t, "GET", "/api/v1/openapi.json", "")
	if r.code != 200 || r.body != string(openAPIDoc) || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("openapi.json = %d (%s)", r.code, r.header.Get("Content-Type"))
	}
}

// TestOpenAPISpecFields: the document says what the submit fields of
// issue 37 mean: a job's working directory, its default and its check.
func TestOpenAPISpecFields(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	tests := []struct {
		schema, field string
		want          []string
	}{
		{"Spec", "workdir", []string{"absolute", "existing directory", "job's user", "400", "mmkctl", "current directory", "its own directory"}},
	}
	for _, tt := range tests {
		d := doc.Components.Schemas[tt.schema].Properties[tt.field].Description
		for _, w := range tt.want {
			if !strings.Contains(d, w) {
				t.Errorf("%s.%s: description %q lacks %q", tt.schema, tt.field, d, w)
			}
		}
	}
}
