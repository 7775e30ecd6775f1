package harness

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/lockharness/lockharness/internal/version"
)

// cmdVersion prints the harness's version, the Go version that built it and
// the redis-server it finds.
func cmdVersion(args []string, stdout, stderr io.Writer) int {
	c := newCommand("version", "", "Prints the harness's version (from its build information), the Go version that\nbuilt it and the version of the redis-server on PATH.")
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return c.fail(stderr, "takes no arguments, got %q", pos[0])
	}
	redis, err := version.RedisServer()
	if err != nil {
		redis = "not found (" + err.Error() + "; run `make setup`)"
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "harness\t%s\n", version.Harness())
	fmt.Fprintf(tw, "go\t%s\n", version.Go())
	fmt.Fprintf(tw, "redis-server\t%s\n", redis)
	tw.Flush()
	return 0
}
