package httpapi

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// The job views write their own JSON. Every job endpoint answers with jobs, and encoding/json's
// reflection over jobView was 5% of the server's CPU for a create and for a start under load
// (docs/benchmarks.md, table 5f). The bytes are exactly what encoding/json writes for the same
// fields with HTML escaping off (reflectJSON); FuzzJobViewJSON compares the two. A job with a
// time encoding/json refuses (a year past 9999) goes through reflectJSON, to fail as it fails.

// selfEncoder is a response that writes its own JSON, which marshalJSON takes.
type selfEncoder interface {
	encodeJSON() ([]byte, error)
}

func (v jobView) encodeJSON() ([]byte, error) {
	if !v.timesFit() || v.remote() {
		return reflectJSON(v)
	}
	return v.appendJSON(make([]byte, 0, 512)), nil
}

func (v reservationView) encodeJSON() ([]byte, error) {
	if !v.Job.timesFit() || v.Job.remote() {
		return reflectJSON(v)
	}
	b := append(make([]byte, 0, 768), `{"job":`...)
	b = v.Job.appendJSON(b)
	b = append(b, `,"upload_url":`...)
	b = appendJSONString(b, v.UploadURL)
	b = append(b, `,"upload_expires_in":`...)
	b = strconv.AppendInt(b, int64(v.UploadExpiresIn), 10)
	return append(b, '}'), nil
}

func (v jobListView) encodeJSON() ([]byte, error) {
	b := append(make([]byte, 0, 64+512*len(v.Data)), `{"data":[`...)
	for i := range v.Data {
		if !v.Data[i].timesFit() || v.Data[i].remote() {
			return reflectJSON(v)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = v.Data[i].appendJSON(b)
	}
	b = append(b, `],"has_more":`...)
	b = strconv.AppendBool(b, v.HasMore)
	return append(b, '}'), nil
}

// remote reports whether the job has source_url or deliver_to, which only reflectJSON writes
// (a job with remote files is rare, and its transfers dwarf the encoding).
func (v *jobView) remote() bool { return v.SourceURL != "" || v.DeliverTo != nil }

// timesFit reports whether every time of the job is in the years RFC 3339 can write.
func (v *jobView) timesFit() bool {
	fits := func(t *time.Time) bool { return t == nil || t.Year() >= 0 && t.Year() <= 9999 }
	return fits(&v.ExpiresAt) && fits(&v.CreatedAt) && fits(v.StartedAt) && fits(v.FinishedAt)
}

func (v *jobView) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, v.ID)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, v.Status)
	b = append(b, `,"input_format":`...)
	b = appendJSONString(b, v.InputFormat)
	b = append(b, `,"target_format":`...)
	b = appendJSONString(b, v.TargetFormat)
	b = append(b, `,"input_bytes":`...)
	if v.InputBytes == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *v.InputBytes, 10)
	}
	b = append(b, `,"options":`...)
	if v.Options == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONValue(b, v.Options)
	}
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(v.Attempt), 10)
	b = append(b, `,"error_code":`...)
	b = appendOptString(b, v.ErrorCode)
	b = append(b, `,"error_message":`...)
	b = appendOptString(b, v.ErrorMessage)
	b = append(b, `,"error_reason":`...)
	b = appendOptString(b, v.ErrorReason)
	b = append(b, `,"expires_at":`...)
	b = appendJSONTime(b, v.ExpiresAt)
	b = append(b, `,"created_at":`...)
	b = appendJSONTime(b, v.CreatedAt)
	b = append(b, `,"started_at":`...)
	b = appendOptTime(b, v.StartedAt)
	b = append(b, `,"finished_at":`...)
	b = appendOptTime(b, v.FinishedAt)
	b = append(b, `,"output":`...)
	if o := v.Output; o == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"bytes":`...)
		b = strconv.AppendInt(b, o.Bytes, 10)
		b = append(b, `,"sha256":`...)
		b = appendJSONString(b, o.SHA256)
		b = append(b, `,"url":`...)
		b = appendJSONString(b, o.URL)
		b = append(b, `,"url_expires_in":`...)
		b = strconv.AppendInt(b, int64(o.URLExpiresIn), 10)
		b = append(b, `,"warnings":`...)
		if o.Warnings == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i, w := range o.Warnings {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"code":`...)
				b = appendJSONString(b, w.Code)
				b = append(b, `,"message":`...)
				b = appendJSONString(b, w.Message)
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, `,"verified":`...)
		b = strconv.AppendBool(b, o.Verified)
		b = append(b, `,"cached":`...)
		b = strconv.AppendBool(b, o.Cached)
		b = append(b, '}')
	}
	if v.Progress != nil {
		b = append(append(b, `,"progress":`...), v.Progress...)
	}
	return append(b, '}')
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendJSONString(b, *s)
}

func appendOptTime(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendJSONTime(b, *t)
}

// appendJSONTime writes t as time.Time's MarshalJSON does: RFC 3339 with nanoseconds. The
// caller checked that its year fits (timesFit).
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendJSONString writes s as a JSON string. Printable ASCII without quotes or backslashes,
// which is every id, status, format, hash and URL, is copied; anything else goes through
// encoding/json, so control characters, invalid UTF-8 and U+2028/U+2029 come out as it writes them.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return appendJSONValue(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONValue writes v with reflectJSON: a string with characters encoding/json escapes,
// or a job's options. Neither can fail to encode.
func appendJSONValue(b []byte, v any) []byte {
	js, _ := reflectJSON(v)
	return append(b, js...)
}
