// Package deploy holds the serve command's container image (Dockerfile) and Kubernetes
// manifests (k8s/), and the tests that check them against the published API types: the
// Kubernetes API (k8s.io/api), the Gateway API Inference Extension
// (sigs.k8s.io/gateway-api-inference-extension: InferencePool, and the endpoint picker's
// own flag and configuration loaders) and the Gateway API (sigs.k8s.io/gateway-api).
//
// It is a module of its own so that the SDK's go.mod does not carry Kubernetes. Run its
// tests from this directory: go test ./...
package deploy
