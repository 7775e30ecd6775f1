package main

import (
	"strings"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/scenario"
)

// backendFlags adds --backend and --image to a verb that runs catalog
// scenarios; the returned function applies them to a scenario's spec,
// leaving the catalog's choice where a flag was not given.
func backendFlags(fs *command) func(*scenario.Spec) {
	backend := fs.String("backend", "", "where nodes run: "+strings.Join(cluster.Backends, ", ")+" (default: the scenario's, local)")
	image := fs.String("image", "", "the docker backend's node `image`, which must have redis-server on its PATH (default "+cluster.DefaultImage+", built by make docker-image)")
	return func(s *scenario.Spec) {
		if *backend != "" {
			s.Backend = *backend
		}
		if *image != "" {
			s.Image = *image
		}
	}
}
