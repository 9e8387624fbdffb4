// Package blobstore is convsvc's object storage: job files kept under one
// directory, HMAC-signed upload and download URLs, and the HTTP handler that
// serves those URLs on the blob listener.
//
// # Layout
//
//	DIR/url.secret      URL-signing key (64 hex characters, mode 0600), generated on first Open
//	DIR/uploads/{id}    the latest complete upload, replaced atomically by each PUT until the job starts;
//	                    its SHA-256 in the attribute user.convsvc.sha256 (Linux)
//	DIR/inputs/{id}     a sealed input of an earlier version (read, never written)
//	DIR/outputs/{id}    a conversion result, its metadata in the attribute user.convsvc.output,
//	                    or (filesystems without user attributes, earlier versions) in {id}.meta
//	DIR/tmp/            files being written; emptied by Open
//
// Every file reaches its final name by write, fsync, rename and directory
// fsync, so a crash leaves either the old file or the new one, never a part.
//
// # What each fsync protects
//
// A file costs two: one of the file, one of its directory. Both are needed: the
// job store may record a job as started (its input exists) or succeeded (its
// output exists) the moment the file's name is published, and a crash after that
// record must find the file under the name with all its bytes.
//
//   - The file's fsync makes its bytes and its attribute durable. The attribute
//     (an upload's SHA-256, an output's size, hash and type) is set first, so one
//     fsync covers data and metadata; a sidecar, where no attribute can be set,
//     costs a second file's fsync and rename. The bytes were already on their way
//     (startWriteback every 8 MiB of an upload, over the whole output before its
//     hash is read back), so the fsync mostly waits for the last of them.
//   - The directory's fsync makes the rename durable: without it a crash can leave
//     the file under its temporary name in tmp/, which Open then removes.
//
// The PUT answers only after both, so an upload it acknowledged survives a crash
// and the start that seals it writes nothing. An upload's SHA-256 is taken while
// its body is received (hashing goroutine beside the writes, UploadSHA256 reads
// it back without reading the file); an output's is taken beside its writes, or,
// when a worker process wrote it through File, by reading the file back once from
// the page cache before its fsync.
//
// # Sealing
//
// Starting a job seals its upload without moving it: Seal takes the id lock,
// reads the size of uploads/{id} and, still holding the lock, lets the job
// store commit the job as started. That commit is the durable record, and
// nothing else needs to be written:
//
//   - the file itself is durable: the PUT that stored it fsynced it and the
//     uploads/ directory before answering, and a job cannot start without it;
//   - a PUT cannot replace a started job's file: it asks Config.JobState (the
//     job store) before its body streams and again under the id lock before
//     the file lands, and is refused with 409 upload_sealed; a PUT that
//     reaches its commit while Seal runs waits for the lock and is refused;
//   - a finished, cancelled or expired job takes no upload at all (409
//     job_finished, before the body is read), and one that no longer exists
//     neither (404 not_found), so nothing lands outside a live job;
//     DeleteInput drops a finished job's input and keeps its output;
//   - OpenInput, which the workers call only for started jobs, opens
//     inputs/{id} (an earlier version's sealed input), else uploads/{id};
//   - Delete removes both names, and JobIDs lists ids found under either, so
//     the sweeper's orphan pass finds every file.
//
// Earlier versions renamed the upload to inputs/{id} here, without a
// directory fsync; that rename was 13% of the API server's CPU while 64
// clients started jobs.
//
// # Signed URLs
//
//	{PublicURL}/uploads/{id}?expires=UNIX&size=N&sig=HEX   PUT
//	{PublicURL}/outputs/{id}?expires=UNIX&size=N&sig=HEX   GET, HEAD
//
// sig is the lowercase hex HMAC-SHA256 of "METHOD\nPATH\nEXPIRES\nSIZE", where
// METHOD is PUT or GET (HEAD is checked as GET), PATH is /uploads/{id} or
// /outputs/{id}, and EXPIRES and SIZE are the decimal strings of the query.
// The signature covers the handler's path, not PublicURL: a proxy that serves
// the store under a path prefix must strip it. Exactly one spelling of a URL is
// accepted: no repeated, missing or extra parameters, no percent-encoding, no
// signs or leading zeros, lowercase hex. A URL is valid up to and including the
// instant EXPIRES (a whole Unix second) and refused from the next nanosecond;
// an upload that started in time may finish later. An API upload URL's EXPIRES
// is the job's created_at + 900 s rounded up to the second (httpapi), so it
// takes uploads for the whole 900 s of SPEC.md, and less than a second more.
//
// # Errors
//
// Error bodies are {"error":{"code":"...","message":"..."}} (application/json).
// A malformed query is the client's request being broken (400); anything about
// the signature's value is a refusal (403):
//
//	404 not_found              unknown path, invalid id, no output, signed size != output size, or PUT for a job that no longer exists
//	405 method_not_allowed     wrong method for the path (Allow header set)
//	400 invalid_request        query lacks, repeats or adds a parameter; expires or size not a canonical non-negative integer
//	403 invalid_signature      sig not 64 lowercase hex digits, or not matching method, path, expires and size
//	403 url_expired            the signature holds but the URL expired
//	411 length_required        PUT without Content-Length (chunked)
//	400 size_mismatch          Content-Length or the body's length differs from the signed size
//	409 upload_sealed          PUT after the job was started (Seal)
//	409 job_finished           PUT after the job finished, was cancelled or expired
//	409 upload_in_progress     another PUT to the same id is still streaming
//	408 transfer_stalled       the PUT body made no progress (64 KiB) within the progress timeout; nothing kept
//	412 precondition_failed    GET with a failing If-Match / If-Unmodified-Since
//	416 range_not_satisfiable  GET with a Range outside the file
//	503 storage_unavailable    the disk failed (Store methods wrap such errors with ErrStorage)
//	507 insufficient_storage   the disk has no room for the upload (ENOSPC, EDQUOT, EFBIG: IsStorageFull); nothing kept
//
// # Big tests
//
// TestHandler_Put_2GBMemory uploads 2,000,000,000 bytes to prove memory stays
// bounded at the service's maximum upload size. It needs about 2 GB of free
// disk in the temp dir and runs only with CONVSVC_BIG_TESTS=1 and without -short.
package blobstore
