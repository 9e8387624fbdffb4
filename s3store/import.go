package s3store

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/convsvc/convsvc/blobstore"
)

// ImportInput stores size bytes from r as the job's upload (UploadKey) and its sealed copy
// (InputKey), as `convsvc admin migrate` does for the unfinished jobs it copies, and returns
// what Seal would record for it (r must be seekable: the request is signed over its body):
// the size, the ETag and, in a versioned bucket, the version id. The object lands whole or
// not at all (one PutObject with its Content-Length). ctx bounds the transfer.
func (s *Store) ImportInput(ctx context.Context, jobID string, r io.ReadSeeker, size int64) (UploadInfo, error) {
	if !validID(jobID) {
		return UploadInfo{}, blobstore.ErrInvalidID
	}
	if size < 0 {
		return UploadInfo{}, fmt.Errorf("s3store: import input %s: size %d is negative", jobID, size)
	}
	out, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(s.UploadKey(jobID)),
		Body:          r,
		ContentLength: aws.Int64(size),
	})
	if err != nil {
		return UploadInfo{}, fmt.Errorf("%w: import input %s: %w", ErrStorage, jobID, err)
	}
	info := UploadInfo{Size: size, ETag: aws.ToString(out.ETag), VersionID: aws.ToString(out.VersionId)}
	if info.VersionID == "null" {
		info.VersionID = ""
	}
	if info.SHA256, err = s.copyInput(ctx, jobID, info); err != nil {
		return UploadInfo{}, fmt.Errorf("import input %s: %w", jobID, err)
	}
	return info, nil
}
