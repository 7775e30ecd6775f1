//go:build !linux

package hugepages

func advise([]byte) {}
