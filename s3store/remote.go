package s3store

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/convsvc/convsvc/blobstore"
)

// OpenOutput streams the output one attempt of the job committed, with its size (for a
// delivery PUT, which needs the length before the body); blobstore.ErrNotFound when there is
// none. ctx bounds the transfer; the caller closes the body.
func (s *Store) OpenOutput(ctx context.Context, jobID string, attempt int) (io.ReadCloser, int64, error) {
	if !validID(jobID) {
		return nil, 0, blobstore.ErrInvalidID
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.OutputKey(jobID, attempt))})
	if err != nil {
		if isNotFound(err) {
			return nil, 0, fmt.Errorf("open output %s: %w", jobID, blobstore.ErrNotFound)
		}
		return nil, 0, fmt.Errorf("%w: open output %s: %w", ErrStorage, jobID, err)
	}
	return out.Body, aws.ToInt64(out.ContentLength), nil
}
