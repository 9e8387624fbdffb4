package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Job and account records are Protocol Buffers wire-format messages, written field by field
// with protowire (no generated code): a create or start decodes and re-encodes them inside the
// write transaction, and encoding/json spent a fifth of the API server's CPU there. The format
// is standard (`protoc --decode_raw` reads a record), skips fields it does not know, and takes
// new fields by number. Records written by schema 1 are JSON; a JSON record starts with '{',
// which as a protobuf tag would be field 15 with the deprecated group wire type, a number
// neither message uses, so readers tell the two apart by the first byte. A JSON record is
// rewritten in the new format the next time it changes.

// Field numbers of a job record. Times are signed varints of Unix nanoseconds; an absent
// time is the zero time (or nil for the optional ones).
const (
	jobFieldID           protowire.Number = 1
	jobFieldAccountID    protowire.Number = 2
	jobFieldSeq          protowire.Number = 3
	jobFieldStatus       protowire.Number = 4
	jobFieldInputFormat  protowire.Number = 5
	jobFieldTargetFormat protowire.Number = 6
	jobFieldInputBytes   protowire.Number = 7
	jobFieldOptions      protowire.Number = 8
	jobFieldAttempt      protowire.Number = 9
	jobFieldErrorCode    protowire.Number = 10
	jobFieldErrorMessage protowire.Number = 11
	jobFieldCreatedAt    protowire.Number = 12
	jobFieldStartedAt    protowire.Number = 13
	jobFieldFinishedAt   protowire.Number = 14
	jobFieldExpiresAt    protowire.Number = 16 // 15 is skipped: see isJSONRecord
	jobFieldOutputBytes  protowire.Number = 17
	jobFieldOutputSHA256 protowire.Number = 18
	jobFieldPrevJobID    protowire.Number = 19
	// The attempt that wrote the output, and the object the start sealed (S3).
	jobFieldOutputAttempt protowire.Number = 20
	jobFieldUploadSize    protowire.Number = 21
	jobFieldUploadETag    protowire.Number = 22
	jobFieldUploadVersion protowire.Number = 23
	// jobFieldOutputWarning is repeated: one (code, message) message per warning, in order.
	jobFieldOutputWarning protowire.Number = 24
	jobFieldErrorReason   protowire.Number = 25
	// 40 and 41 (not 26 on): the remote-file fields keep clear of numbers other fields of
	// this round may take.
	jobFieldSourceURL protowire.Number = 40
	jobFieldDeliverTo protowire.Number = 41 // Delivery as JSON
	// jobFieldOutputVerified is 1 when the output passed its check (output.verified); the
	// numbers between are left to other fields.
	jobFieldOutputVerified protowire.Number = 35
	// The conversion cache (store/cache.go): numbers 50-54.
	jobFieldInputSHA256  protowire.Number = 50
	jobFieldCacheBase    protowire.Number = 51
	jobFieldOutputCached protowire.Number = 52
	jobFieldOutputObject protowire.Number = 53
	// jobFieldHitCents is Job.HitCents, written whenever it is set (0 included).
	jobFieldHitCents protowire.Number = 54

	warningFieldCode    protowire.Number = 1
	warningFieldMessage protowire.Number = 2
)

// Field numbers of an account record; the monthly maps are repeated (month, cents) messages.
const (
	acctFieldID              protowire.Number = 1
	acctFieldName            protowire.Number = 2
	acctFieldSpendCapCents   protowire.Number = 3
	acctFieldReservedCents   protowire.Number = 4
	acctFieldMonthlySpend    protowire.Number = 5
	acctFieldPurgedSuccesses protowire.Number = 6
	acctFieldCreatedAt       protowire.Number = 7
	acctFieldLastJobID       protowire.Number = 8
	acctFieldMaxRunning      protowire.Number = 9
	acctFieldMaxQueued       protowire.Number = 10

	monthFieldMonth protowire.Number = 1
	monthFieldCents protowire.Number = 2
)

// errRecord reports a record that is neither valid JSON of schema 1 nor a valid message.
var errRecord = errors.New("malformed record")

// isJSONRecord tells a schema 1 (JSON) record from a protobuf one.
func isJSONRecord(b []byte) bool { return len(b) > 0 && b[0] == '{' }

// readRecord decodes a record of either schema into *v with decode (protobuf) or
// encoding/json (schema 1); a nil record is ErrNotFound.
func readRecord[T any](data []byte, v *T, decode func([]byte, *T) error) error {
	if data == nil {
		return ErrNotFound
	}
	var zero T
	*v = zero
	var err error
	if isJSONRecord(data) {
		err = json.Unmarshal(data, v)
	} else {
		err = decode(data, v)
	}
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendInt(b []byte, num protowire.Number, v int64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

func appendTime(b []byte, num protowire.Number, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, protowire.EncodeZigZag(t.UnixNano()))
}

// appendJob encodes job as a record.
func appendJob(b []byte, job *Job) []byte {
	b = appendString(b, jobFieldID, job.ID)
	b = appendString(b, jobFieldAccountID, job.AccountID)
	b = appendInt(b, jobFieldSeq, int64(job.Seq))
	b = appendString(b, jobFieldStatus, job.Status)
	b = appendString(b, jobFieldInputFormat, job.InputFormat)
	b = appendString(b, jobFieldTargetFormat, job.TargetFormat)
	b = appendInt(b, jobFieldInputBytes, job.InputBytes)
	if len(job.Options) > 0 {
		b = protowire.AppendTag(b, jobFieldOptions, protowire.BytesType)
		b = protowire.AppendBytes(b, job.Options)
	}
	b = appendInt(b, jobFieldAttempt, int64(job.Attempt))
	b = appendString(b, jobFieldErrorCode, job.ErrorCode)
	b = appendString(b, jobFieldErrorMessage, job.ErrorMessage)
	b = appendString(b, jobFieldErrorReason, job.ErrorReason)
	if job.Output != nil && job.Output.Verified {
		b = appendInt(b, jobFieldOutputVerified, 1)
	}
	b = appendTime(b, jobFieldCreatedAt, job.CreatedAt)
	if job.StartedAt != nil {
		b = appendTime(b, jobFieldStartedAt, *job.StartedAt)
	}
	if job.FinishedAt != nil {
		b = appendTime(b, jobFieldFinishedAt, *job.FinishedAt)
	}
	b = appendTime(b, jobFieldExpiresAt, job.ExpiresAt)
	if job.Output != nil {
		// An output is recorded even when empty, so its bytes field is written as it is.
		b = protowire.AppendTag(b, jobFieldOutputBytes, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(job.Output.Bytes))
		b = appendString(b, jobFieldOutputSHA256, job.Output.SHA256)
		b = appendInt(b, jobFieldOutputAttempt, int64(job.Output.Attempt))
		if job.Output.Cached {
			b = appendInt(b, jobFieldOutputCached, 1)
		}
		b = appendString(b, jobFieldOutputObject, job.Output.Object)
	}
	b = appendString(b, jobFieldInputSHA256, job.InputSHA256)
	b = appendString(b, jobFieldCacheBase, job.CacheBase)
	if job.HitCents != nil {
		b = protowire.AppendTag(b, jobFieldHitCents, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(*job.HitCents))
	}
	if job.Upload != nil {
		// Recorded even when empty, like the output's bytes.
		b = protowire.AppendTag(b, jobFieldUploadSize, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(job.Upload.Size))
		b = appendString(b, jobFieldUploadETag, job.Upload.ETag)
		b = appendString(b, jobFieldUploadVersion, job.Upload.VersionID)
	}
	b = appendString(b, jobFieldPrevJobID, job.PrevJobID)
	b = appendString(b, jobFieldSourceURL, job.SourceURL)
	if job.DeliverTo != nil {
		d, _ := json.Marshal(job.DeliverTo) // strings and a map of strings: cannot fail
		b = protowire.AppendTag(b, jobFieldDeliverTo, protowire.BytesType)
		b = protowire.AppendBytes(b, d)
	}
	if job.Output != nil {
		for _, w := range job.Output.Warnings {
			size := protowire.SizeTag(warningFieldCode) + protowire.SizeBytes(len(w.Code)) +
				protowire.SizeTag(warningFieldMessage) + protowire.SizeBytes(len(w.Message))
			b = protowire.AppendTag(b, jobFieldOutputWarning, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(size))
			b = protowire.AppendTag(b, warningFieldCode, protowire.BytesType)
			b = protowire.AppendString(b, w.Code)
			b = protowire.AppendTag(b, warningFieldMessage, protowire.BytesType)
			b = protowire.AppendString(b, w.Message)
		}
	}
	return b
}

// decodeWarning decodes one warning message of a job record.
func decodeWarning(f field) (Warning, error) {
	var w Warning
	if f.typ != protowire.BytesType {
		return w, f.wrongType()
	}
	err := eachField(f.bytes, func(g field) (err error) {
		switch g.num {
		case warningFieldCode:
			w.Code, err = g.str()
		case warningFieldMessage:
			w.Message, err = g.str()
		}
		return err
	})
	return w, err
}

// field is one decoded field of a record: its number and either its varint or its bytes.
type field struct {
	num   protowire.Number
	typ   protowire.Type
	v     uint64
	bytes []byte
}

// nextField decodes the field at the start of b and returns it and its length, or an error
// for a truncated or malformed field. Fields of types the records never use are returned
// with neither value set, so callers skip them.
func nextField(b []byte) (field, int, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return field{}, 0, fmt.Errorf("%w: %w", errRecord, protowire.ParseError(n))
	}
	f := field{num: num, typ: typ}
	var m int
	switch typ {
	case protowire.VarintType:
		f.v, m = protowire.ConsumeVarint(b[n:])
	case protowire.BytesType:
		f.bytes, m = protowire.ConsumeBytes(b[n:])
	default:
		m = protowire.ConsumeFieldValue(num, typ, b[n:])
	}
	if m < 0 {
		return field{}, 0, fmt.Errorf("%w: field %d: %w", errRecord, num, protowire.ParseError(m))
	}
	return f, n + m, nil
}

// eachField calls fn with every field of a message, in order, until fn or the decoding fails.
func eachField(b []byte, fn func(field) error) error {
	for len(b) > 0 {
		f, size, err := nextField(b)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			return err
		}
		b = b[size:]
	}
	return nil
}

// wrongType reports a field whose wire type is not the one its number has.
func (f field) wrongType() error {
	return fmt.Errorf("%w: field %d has wire type %d", errRecord, f.num, f.typ)
}

// str, integer and time read a field's value, checking its wire type.
func (f field) str() (string, error) {
	if f.typ != protowire.BytesType {
		return "", f.wrongType()
	}
	return string(f.bytes), nil
}

// status reads a job status field: one of the status constants (no copy) when it names one.
func (f field) status() (string, error) {
	if s, ok := knownStatus(f.bytes); ok && f.typ == protowire.BytesType {
		return s, nil
	}
	return f.str()
}

func (f field) integer() (int64, error) {
	if f.typ != protowire.VarintType {
		return 0, f.wrongType()
	}
	return int64(f.v), nil
}

func (f field) time() (time.Time, error) {
	if f.typ != protowire.VarintType {
		return time.Time{}, f.wrongType()
	}
	return time.Unix(0, protowire.DecodeZigZag(f.v)).UTC(), nil
}

// decodeJob decodes a protobuf job record; the result shares no memory with b.
func decodeJob(b []byte, job *Job) error {
	*job = Job{}
	return eachField(b, func(f field) (err error) {
		var n int64
		switch f.num {
		case jobFieldID:
			job.ID, err = f.str()
		case jobFieldAccountID:
			job.AccountID, err = f.str()
		case jobFieldSeq:
			n, err = f.integer()
			job.Seq = uint64(n)
		case jobFieldStatus:
			job.Status, err = f.status()
		case jobFieldInputFormat:
			job.InputFormat, err = f.str()
		case jobFieldTargetFormat:
			job.TargetFormat, err = f.str()
		case jobFieldInputBytes:
			job.InputBytes, err = f.integer()
		case jobFieldOptions:
			if f.typ != protowire.BytesType {
				return f.wrongType()
			}
			job.Options = bytes.Clone(f.bytes)
		case jobFieldAttempt:
			n, err = f.integer()
			job.Attempt = int(n)
		case jobFieldErrorCode:
			job.ErrorCode, err = f.str()
		case jobFieldErrorMessage:
			job.ErrorMessage, err = f.str()
		case jobFieldErrorReason:
			job.ErrorReason, err = f.str()
		case jobFieldCreatedAt:
			job.CreatedAt, err = f.time()
		case jobFieldStartedAt:
			var t time.Time
			t, err = f.time()
			job.StartedAt = &t
		case jobFieldFinishedAt:
			var t time.Time
			t, err = f.time()
			job.FinishedAt = &t
		case jobFieldExpiresAt:
			job.ExpiresAt, err = f.time()
		case jobFieldOutputBytes:
			job.output().Bytes, err = f.integer()
		case jobFieldOutputSHA256:
			job.output().SHA256, err = f.str()
		case jobFieldOutputAttempt:
			n, err = f.integer()
			job.output().Attempt = int(n)
		case jobFieldUploadSize:
			job.upload().Size, err = f.integer()
		case jobFieldUploadETag:
			job.upload().ETag, err = f.str()
		case jobFieldUploadVersion:
			job.upload().VersionID, err = f.str()
		case jobFieldPrevJobID:
			job.PrevJobID, err = f.str()
		case jobFieldSourceURL:
			job.SourceURL, err = f.str()
		case jobFieldDeliverTo:
			if f.typ != protowire.BytesType {
				return f.wrongType()
			}
			job.DeliverTo = new(Delivery)
			err = json.Unmarshal(f.bytes, job.DeliverTo)
		case jobFieldOutputVerified:
			n, err = f.integer()
			job.output().Verified = n != 0
		case jobFieldOutputCached:
			n, err = f.integer()
			job.output().Cached = n != 0
		case jobFieldOutputObject:
			job.output().Object, err = f.str()
		case jobFieldInputSHA256:
			job.InputSHA256, err = f.str()
		case jobFieldCacheBase:
			job.CacheBase, err = f.str()
		case jobFieldHitCents:
			n, err = f.integer()
			job.HitCents = &n
		case jobFieldOutputWarning:
			var w Warning
			w, err = decodeWarning(f)
			o := job.output()
			o.Warnings = append(o.Warnings, w)
		}
		return err
	})
}

// output returns the job's output, creating it for the decoder.
func (j *Job) output() *Output {
	if j.Output == nil {
		j.Output = &Output{}
	}
	return j.Output
}

// upload returns the job's sealed upload, creating it for the decoder.
func (j *Job) upload() *Upload {
	if j.Upload == nil {
		j.Upload = &Upload{}
	}
	return j.Upload
}

// jobRecordField returns the first field num of a protobuf job record without decoding the rest.
func jobRecordField(b []byte, num protowire.Number) (field, bool, error) {
	for len(b) > 0 {
		f, size, err := nextField(b)
		if err != nil {
			return field{}, false, err
		}
		if f.num == num {
			return f, true, nil
		}
		b = b[size:]
	}
	return field{}, false, nil
}

// appendAccount encodes acct as a record, months in order so equal accounts encode alike.
func appendAccount(b []byte, acct *Account) []byte {
	b = appendString(b, acctFieldID, acct.ID)
	b = appendString(b, acctFieldName, acct.Name)
	b = appendInt(b, acctFieldSpendCapCents, acct.SpendCapCents)
	b = appendInt(b, acctFieldReservedCents, acct.ReservedCents)
	b = appendMonths(b, acctFieldMonthlySpend, acct.MonthlySpend)
	b = appendMonths(b, acctFieldPurgedSuccesses, acct.PurgedSuccesses)
	b = appendTime(b, acctFieldCreatedAt, acct.CreatedAt)
	b = appendString(b, acctFieldLastJobID, acct.LastJobID)
	b = appendLimit(b, acctFieldMaxRunning, acct.MaxRunning)
	return appendLimit(b, acctFieldMaxQueued, acct.MaxQueued)
}

// appendLimit writes a limit that is set (a nil limit, none, writes nothing).
func appendLimit(b []byte, num protowire.Number, v *int64) []byte {
	if v == nil {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(*v))
}

func appendMonths(b []byte, num protowire.Number, months map[string]int64) []byte {
	var buf [8]string // most accounts have a few months: sorted on the stack
	keys := buf[:0]
	for m := range months {
		keys = append(keys, m)
	}
	slices.Sort(keys)
	for _, m := range keys {
		cents := uint64(months[m])
		size := protowire.SizeTag(monthFieldMonth) + protowire.SizeBytes(len(m)) +
			protowire.SizeTag(monthFieldCents) + protowire.SizeVarint(cents)
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(size))
		b = protowire.AppendTag(b, monthFieldMonth, protowire.BytesType)
		b = protowire.AppendString(b, m)
		b = protowire.AppendTag(b, monthFieldCents, protowire.VarintType)
		b = protowire.AppendVarint(b, cents)
	}
	return b
}

// decodeAccount decodes a protobuf account record; MonthlySpend is never nil.
func decodeAccount(b []byte, acct *Account) error {
	*acct = Account{MonthlySpend: map[string]int64{}}
	return eachField(b, func(f field) (err error) {
		switch f.num {
		case acctFieldID:
			acct.ID, err = f.str()
		case acctFieldName:
			acct.Name, err = f.str()
		case acctFieldSpendCapCents:
			acct.SpendCapCents, err = f.integer()
		case acctFieldReservedCents:
			acct.ReservedCents, err = f.integer()
		case acctFieldMonthlySpend:
			err = decodeMonth(f, acct.MonthlySpend)
		case acctFieldPurgedSuccesses:
			if acct.PurgedSuccesses == nil {
				acct.PurgedSuccesses = map[string]int64{}
			}
			err = decodeMonth(f, acct.PurgedSuccesses)
		case acctFieldCreatedAt:
			acct.CreatedAt, err = f.time()
		case acctFieldLastJobID:
			acct.LastJobID, err = f.str()
		case acctFieldMaxRunning, acctFieldMaxQueued:
			var v int64
			if v, err = f.integer(); err == nil && f.num == acctFieldMaxRunning {
				acct.MaxRunning = &v
			} else if err == nil {
				acct.MaxQueued = &v
			}
		}
		return err
	})
}

// decodeMonth adds one (month, cents) entry to months.
func decodeMonth(f field, months map[string]int64) error {
	if f.typ != protowire.BytesType {
		return f.wrongType()
	}
	var month string
	var cents int64
	err := eachField(f.bytes, func(g field) (err error) {
		switch g.num {
		case monthFieldMonth:
			month, err = g.str()
		case monthFieldCents:
			cents, err = g.integer()
		}
		return err
	})
	if err != nil {
		return err
	}
	months[month] += cents
	return nil
}
