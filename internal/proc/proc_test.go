package proc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A port picked for a server to bind later must not come from the range
// the proxies' listens on port 0 draw from, and is not handed out twice.
func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	seen := map[int]bool{}
	for range 50 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p >= lo || p < 1024 {
			t.Fatalf("port %d outside 1024-%d", p, lo-1)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}

// A port one process was handed is not handed to another while it holds
// it: the child takes a port and waits, and the port cannot be reserved
// here until the child exits.
func TestFreePortIsNotHandedToAnotherProcess(t *testing.T) {
	if os.Getenv("LOCKHARNESS_PORT_CHILD") == "1" {
		port, err := FreePort()
		if err != nil {
			os.Exit(2)
		}
		fmt.Println(port)
		time.Sleep(time.Minute) // the parent kills it
		return
	}
	child := exec.Command(os.Args[0], "-test.run", "^TestFreePortIsNotHandedToAnotherProcess$")
	child.Env = append(os.Environ(), "LOCKHARNESS_PORT_CHILD=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	port, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		t.Fatalf("the child said %q: %v %v", line, err, perr)
	}
	if reservePort(port) {
		t.Fatalf("port %d, held by process %d, was reserved here too", port, child.Process.Pid)
	}
	child.Process.Kill()
	child.Wait()
	if !reservePort(port) {
		t.Errorf("port %d is still held after its process exited", port)
	}
}
