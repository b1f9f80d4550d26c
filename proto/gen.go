// Package proto holds the protobuf sources of sparkhost's plugin protocol and
// their generated Go code (committed, so building needs no protoc).
//
// Regenerate after editing a .proto file (protoc 3.21+, protoc-gen-go
// v1.36.12, protoc-gen-go-grpc v1.6.2 on PATH):
package proto

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative pluginv1/plugin.proto
