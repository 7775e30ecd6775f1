package history

import (
	"encoding/json"
	"strconv"
)

// AppendLine appends the event as MarshalLine encodes it, byte for byte.
// A client's event, the bulk of every history, is written field by field
// without reflection; a nemesis event (facts, outages, words) and any
// string that JSON must escape go through encoding/json, so the two can
// never differ (TestAppendLineIsMarshalLine).
func (e Event) AppendLine(b []byte) ([]byte, error) {
	if e.Facts != nil || len(e.Down) > 0 || e.Phase != "" || e.Target != "" || e.Detail != "" || e.Options != "" {
		line, err := json.Marshal(e)
		return append(b, line...), err
	}
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(e.Index), 10)
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, e.Time, 10)
	b = appendField(b, `,"type":`, e.Type)
	b = append(b, `,"process":`...)
	b = strconv.AppendInt(b, int64(e.Process), 10)
	if e.Client != 0 {
		b = append(b, `,"client":`...)
		b = strconv.AppendInt(b, int64(e.Client), 10)
	}
	b = appendField(b, `,"f":`, e.F)
	b = appendOmitted(b, `,"key":`, e.Key)
	b = appendOmitted(b, `,"token":`, e.Token)
	b = appendInt(b, `,"fence":`, e.Fence)
	b = appendInt(b, `,"ttl_ms":`, e.TTLMs)
	b = appendInt(b, `,"valid_ms":`, e.ValidMs)
	if e.Value != nil {
		b = append(b, `,"value":`...)
		b = strconv.AppendInt(b, *e.Value, 10)
	}
	b = appendOmitted(b, `,"error":`, e.Error)
	b = appendOmitted(b, `,"reason":`, e.Reason)
	b = appendTrue(b, `,"final":true`, e.Final)
	b = appendTrue(b, `,"background":true`, e.Background)
	b = appendTrue(b, `,"fence_checked":true`, e.FenceChecked)
	b = appendTrue(b, `,"unseen_renewals":true`, e.UnseenRenewals)
	return append(b, '}'), nil
}

func appendInt(b []byte, name string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, name...), v, 10)
}

func appendTrue(b []byte, field string, v bool) []byte {
	if v {
		return append(b, field...)
	}
	return b
}

func appendOmitted(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return appendField(b, name, s)
}

// appendField appends name and s as a JSON string: as is when no byte of
// it needs escaping (printable ASCII but for '"', '\\' and encoding/json's
// HTML-safe '<', '>', '&'), by encoding/json otherwise.
func appendField(b []byte, name, s string) []byte {
	b = append(b, name...)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
