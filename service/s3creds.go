package service

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// s3CredentialsTimeout bounds finding S3 credentials at start-up. The SDK's IMDS client dials
// with 250 ms and waits 500 ms for an answer per attempt, so a machine without IMDS fails in
// seconds; the bound keeps a slow role endpoint from holding start-up longer than this.
const s3CredentialsTimeout = 20 * time.Second

// defaultS3Credentials is the AWS SDK's default credential chain, for a bucket whose static
// keys are not set: the AWS_ACCESS_KEY_ID variables, the shared config and credentials files
// (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE), web identity
// (AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN), the ECS container endpoint
// (AWS_CONTAINER_CREDENTIALS_*) and the EC2 instance role (IMDS). It retrieves credentials
// once, within s3CredentialsTimeout, so start-up fails at once, naming the sources it tried,
// rather than at the first upload.
func defaultS3Credentials(storage, region string) (aws.CredentialsProvider, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s3CredentialsTimeout)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, fmt.Errorf("object storage %s: S3 credentials: %w", storage, err)
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return nil, fmt.Errorf("object storage %s: no S3 credentials (tried %s): %w", storage, credentialSources(), err)
	}
	return cfg.Credentials, nil
}

// credentialSources describes, for an error, the sources the default chain looked at.
func credentialSources() string {
	set := func(names ...string) string {
		var have []string
		for _, n := range names {
			if os.Getenv(n) != "" {
				have = append(have, n)
			}
		}
		if len(have) == 0 {
			return "unset"
		}
		return strings.Join(have, ", ") + " set"
	}
	profile := os.Getenv("AWS_PROFILE")
	if profile == "" {
		profile = "default"
	}
	creds := os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	if creds == "" {
		creds = "~/.aws/credentials"
	}
	conf := os.Getenv("AWS_CONFIG_FILE")
	if conf == "" {
		conf = "~/.aws/config"
	}
	imds := "EC2 instance role (IMDS)"
	if strings.EqualFold(os.Getenv("AWS_EC2_METADATA_DISABLED"), "true") {
		imds += ": disabled by AWS_EC2_METADATA_DISABLED"
	}
	return strings.Join([]string{
		"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or their _FILE twins): " + set("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
		fmt.Sprintf("profile %q in %s and %s", profile, creds, conf),
		"web identity: " + set("AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"),
		"ECS container credentials: " + set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"),
		imds,
	}, "; ")
}
