// Package entrypoint will embed the Python runtime that runs inside the
// sandbox container. It is built in the session issue.
package entrypoint
