package httpapi

import _ "embed"

// OpenAPIDocument is the OpenAPI 3.1 description of the API, served at /v1/openapi.json and held against every response in tests.
//
//go:embed openapi.json
var OpenAPIDocument []byte
