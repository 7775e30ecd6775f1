package models

import (
	"fmt"
	"strconv"
)

// describeOperation is one line for porcupine's visualization, such as
// "acquire c1-4 ttl 1000 ms → ok, fence 7".
func describeOperation(input, output interface{}) string {
	in, out := input.(Input), output.(Output)
	if in.Kind == seed {
		return fmt.Sprintf("(segment start: fences granted so far reach %d)", out.Fence)
	}
	s := in.Kind.String()
	if in.Kind != Read {
		s += " " + tokenName(in.Token)
	}
	if in.Kind == Acquire || in.Kind == Extend {
		if in.TTL == Forever {
			s += " without expiry"
		} else {
			s += " ttl " + ms(in.TTL)
		}
	}
	switch out.Outcome {
	case OK:
		s += " → ok"
		switch {
		case in.Kind == Acquire && out.Fence != 0:
			s += ", fence " + strconv.FormatInt(out.Fence, 10)
		case in.Kind == Read && out.Holder == "":
			s += ", free"
		case in.Kind == Read:
			s += ", held by " + tokenName(out.Holder)
		}
	case Fail:
		s += " → fail"
		if out.Error != "" {
			s += ": " + out.Error
		}
	default:
		s += " → unknown"
	}
	return s
}

func tokenName(t string) string {
	switch t {
	case GhostToken:
		return "(an earlier acquire of unknown outcome)"
	case "":
		return "(no token)"
	}
	return t
}

// secs tells a time as checker.Secs does (a test holds them together);
// models sits below the checker and cannot call it.
func secs(ns int64) string {
	if ns == Forever {
		return "never"
	}
	return fmt.Sprintf("%.3f s", float64(ns)/1e9)
}

func ms(ns int64) string {
	if ns%1e6 == 0 {
		return strconv.FormatInt(ns/1e6, 10) + " ms"
	}
	return fmt.Sprintf("%.3f ms", float64(ns)/1e6)
}
