package s3store

import "github.com/aws/aws-sdk-go-v2/service/s3"

// Client is the store's S3 client, for the tests' own requests.
func (s *Store) Client() *s3.Client { return s.client }
