package hugepages

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// vmFlags are the kernel's flags for the mapping that holds addr.
func vmFlags(t *testing.T, addr uintptr) []string {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.Fields(rest)
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return nil
}

func TestMakeAsksForHugePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("huge pages are asked for on Linux only")
	}
	if mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(mode), "[never]") {
		t.Skip("this kernel gives no transparent huge pages")
	}
	big := Make[uint64](0, 4<<20) // 32 MiB
	if flags := vmFlags(t, uintptr(unsafe.Pointer(unsafe.SliceData(big[:1])))+16<<20); !slices.Contains(flags, "hg") {
		t.Errorf("a 32 MiB array's mapping has flags %v, without hg (huge pages advised)", flags)
	}
	big = append(big, 1, 2, 3)
	if len(big) != 3 || big[2] != 3 {
		t.Errorf("the advised array holds %v", big)
	}
	runtime.KeepAlive(big)
}

func TestSmallArraysAreLeftAlone(t *testing.T) {
	small := Make[byte](10, 100)
	if len(small) != 10 || cap(small) != 100 {
		t.Errorf("Make(10, 100) is %d long, %d capacity", len(small), cap(small))
	}
	Advise([]int(nil)) // nothing to advise; must not panic
}
