package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestBadNamesListTheValidOnes(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--lock", "nosuch"}, `unknown lock "nosuch" (valid: cad, del, fenced, naive, redislock, redlock, redsync, renew, rueidislock, wait)`},
		{[]string{"run", "--nemesis", "nosuch"}, `unknown nemesis "nosuch" (valid: clock-jump, clock-strobe, failover, kill-client, kill-node`},
		{[]string{"run", "--topology", "ring"}, `unknown topology "ring" (valid: single, sentinel, redlock)`},
		{[]string{"run", "--persistence", "rdb"}, `unknown persistence "rdb" (valid: none, aof-always)`},
		{[]string{"run", "--ttl", "soon"}, `"soon" is not a duration`},
		{[]string{"frobnicate"}, `unknown command "frobnicate" (valid: run, repro, suite, list, check, report, serve, help)`},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := run(c.args, &stdout, &stderr)
		if code != exitHarness {
			t.Errorf("%v: exit %d, want %d", c.args, code, exitHarness)
		}
		if !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: stderr %q lacks %q", c.args, stderr.String(), c.want)
		}
	}
}

func TestRunHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, flag := range []string{"-lock", "-nemesis", "-clients", "-time-limit", "-ttl", "-hold", "-seed", "-persistence", "-store", "-name"} {
		if !strings.Contains(stderr.String(), flag) {
			t.Errorf("help lacks %s", flag)
		}
	}
}
