module github.com/rewindgg/rewind

go 1.26

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/cockroachdb/datadriven v1.0.3
	github.com/hashicorp/go-msgpack/v2 v2.1.5
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/pmezard/go-difflib v1.0.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
