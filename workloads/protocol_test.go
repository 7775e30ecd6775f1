package workloads

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/access"
)

// A ready line that names topologies is read as it always was; one that
// announces needs is read for them instead, and names nothing else.
func TestReadyLineNeedsOrTopologies(t *testing.T) {
	for _, c := range []struct {
		name, line         string
		needs, prefers     []access.Capability
		topologies         []string
		unsupportedCluster string
	}{
		{name: "the redis-py worker's line, unchanged",
			line:       `{"kind":"ready","protocol":1,"name":"redis-py-lock","version":"4.3.4","extend":true,"topologies":["single","sentinel"],"unsupported":{"cluster":"no address_remap"},"writes":["postgres"]}`,
			topologies: []string{"single", "sentinel"}, unsupportedCluster: "no address_remap"},
		{name: "neither: single, as before",
			line:       `{"kind":"ready","protocol":1,"name":"plain"}`,
			topologies: []string{"single"}},
		{name: "needs",
			line:  `{"kind":"ready","protocol":1,"name":"mine","needs":["primary","replicas"]}`,
			needs: []access.Capability{access.Primary, access.Replicas}},
		{name: "needs and prefers",
			line:  `{"kind":"ready","protocol":1,"name":"quorum","needs":["independent"],"prefers":["majorities"]}`,
			needs: []access.Capability{access.Independent}, prefers: []access.Capability{access.Majorities}},
		{name: "needs beside topologies for older harnesses: the needs hold",
			line:  `{"kind":"ready","protocol":1,"name":"both","needs":["primary"],"topologies":["single"],"unsupported":{"cluster":"no remap"}}`,
			needs: []access.Capability{access.Primary}, unsupportedCluster: "no remap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := ParseReady([]byte(c.line))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Needs, c.needs) || !reflect.DeepEqual(r.Prefers, c.prefers) || !reflect.DeepEqual(r.Topologies, c.topologies) {
				t.Errorf("needs %v, prefers %v, topologies %v; want %v, %v, %v", r.Needs, r.Prefers, r.Topologies, c.needs, c.prefers, c.topologies)
			}
			if r.Unsupported["cluster"] != c.unsupportedCluster {
				t.Errorf("unsupported %v", r.Unsupported)
			}
		})
	}
}

func TestReadyLineNeedsAreCapabilities(t *testing.T) {
	for line, want := range map[string]string{
		`{"kind":"ready","protocol":1,"name":"w","needs":["single"]}`:                      `its ready line needs "single", which is nothing a topology offers a lock client; it can need primary, independent, majorities, replicas, sentinels, slots`,
		`{"kind":"ready","protocol":1,"name":"w","needs":["primary"],"prefers":["fast"]}`:  `its ready line prefers "fast"`,
		`{"kind":"ready","protocol":1,"name":"w","needs":["node-control"]}`:                `its ready line needs "node-control"`,
		`{"kind":"ready","protocol":1,"name":"w","prefers":["majorities"]}`:                `"prefers" without "needs"`,
		`{"kind":"ready","protocol":1,"name":"w","needs":"primary"}`:                       `field "needs" is a JSON string`,
		`{"kind":"ready","protocol":1,"name":"w","topologies":["single"],"prefers":["x"]}`: `its ready line prefers "x"`,
	} {
		if _, err := ParseReady([]byte(line)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", line, err, want)
		}
	}
}

// The built-in worker announces what its recipe needs and prefers, never
// topology names, so it runs wherever its recipe does.
func TestBuiltInWorkerAnnouncesItsRecipesNeeds(t *testing.T) {
	var out bytes.Buffer
	if err := RunWorker(strings.NewReader(`{"op":"hello","protocol":1,"probe":true}`+"\n"), &out, WorkerConfig{Lock: "redsync"}); err != nil {
		t.Fatal(err)
	}
	r, err := ParseReady(bytes.TrimSpace(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Needs, []access.Capability{access.Independent}) || !reflect.DeepEqual(r.Prefers, []access.Capability{access.Majorities}) || r.Topologies != nil {
		t.Errorf("ready line %s: needs %v, prefers %v, topologies %v", out.Bytes(), r.Needs, r.Prefers, r.Topologies)
	}
}
