package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	infv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/config/loader"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/datalayer"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/flowcontrol"
	fwkplugin "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/plugin"
	extractormetrics "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/datalayer/extractor/metrics"
	sourcemetrics "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/datalayer/source/metrics"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/flowcontrol/fairness"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/flowcontrol/ordering"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/flowcontrol/saturationdetector/concurrency"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/flowcontrol/saturationdetector/utilization"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/flowcontrol/usagelimits"
	reqdataprodprefix "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/requestcontrol/dataproducer/approximateprefix"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/requesthandling/parsers/openai"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/requesthandling/parsers/passthrough"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/picker"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/profile"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/kvcacheutilization"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/prefix"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/queuedepth"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/runningrequests"
	eppserver "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/server"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// What the manifests must agree with: the serve command, the model, and the routing
// metrics serve publishes (the model-server protocol of the Inference Extension, under
// vLLM's names).
const (
	manifestDir = "k8s"

	serveName = "bonsai-serve" // the model server's Deployment and Service
	servePort = 8080           // the image's -addr 0.0.0.0:8080 (Dockerfile)
	eppName   = "bonsai-epp"   // the endpoint picker's Deployment, Service, ConfigMap, RBAC
	poolName  = "bonsai"
	routeName = "bonsai" // the HTTPRoute

	healthPath = "/health" // liveness
	readyPath  = "/ready"  // readiness: loaded, warmed, not draining

	metricQueued    = "vllm:num_requests_waiting"
	metricRunning   = "vllm:num_requests_running"
	metricKVUsage   = "vllm:kv_cache_usage_perc"
	metricCacheInfo = "vllm:cache_config_info"

	// Ternary-Bonsai-2-27B-PQ2_0.gguf as the Hub lists it, and the KV cache the README gives
	// for it (fp16, the default); the rest of a process (heap, Gated DeltaNet states,
	// activations) is allowed a GiB.
	modelFileBytes  = 7_200_000_000
	kvBytesPerToken = 64 << 10
	overheadBytes   = 1 << 30

	// The endpoint picker's gRPC (ext-proc) port: its --grpc-port default.
	eppGRPCPort = 9002
)

// bundle is every object of the manifests, by kind and name.
type bundle struct {
	deployments     map[string]*appsv1.Deployment
	services        map[string]*corev1.Service
	configMaps      map[string]*corev1.ConfigMap
	secrets         map[string]*corev1.Secret
	serviceAccounts map[string]*corev1.ServiceAccount
	roles           map[string]*rbacv1.Role
	roleBindings    map[string]*rbacv1.RoleBinding
	pools           map[string]*infv1.InferencePool
	gateways        map[string]*gwv1.Gateway
	routes          map[string]*gwv1.HTTPRoute
}

// scheme knows the kinds the manifests may hold, each from its published Go module; a
// kind outside it is refused.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme, infv1.Install, gwv1.Install,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

var strictDecoder = serializer.NewCodecFactory(newScheme(), serializer.EnableStrict).UniversalDeserializer()

// splitDocuments splits a multi-document YAML stream, dropping documents that hold only
// comments.
func splitDocuments(raw []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		empty := true
		for _, line := range strings.Split(string(doc), "\n") {
			if l := strings.TrimSpace(line); l != "" && l != "---" && !strings.HasPrefix(l, "#") {
				empty = false
				break
			}
		}
		if !empty {
			docs = append(docs, doc)
		}
	}
}

// decodeStrict decodes one document into its published Go type: an unknown kind or
// version, an unknown or duplicated field, or a value of the wrong type is an error.
func decodeStrict(doc []byte) (runtime.Object, error) {
	obj, gvk, err := strictDecoder.Decode(doc, nil, nil)
	if err != nil {
		if gvk != nil && gvk.Kind != "" {
			return nil, fmt.Errorf("%s %s: %w", gvk.GroupVersion(), gvk.Kind, err)
		}
		return nil, err
	}
	return obj, nil
}

// parseManifests decodes every document of the named files (name → contents).
func parseManifests(files map[string][]byte) (*bundle, error) {
	b := &bundle{
		deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{},
		configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		serviceAccounts: map[string]*corev1.ServiceAccount{}, roles: map[string]*rbacv1.Role{},
		roleBindings: map[string]*rbacv1.RoleBinding{}, pools: map[string]*infv1.InferencePool{},
		gateways: map[string]*gwv1.Gateway{}, routes: map[string]*gwv1.HTTPRoute{},
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		docs, err := splitDocuments(files[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		for i, doc := range docs {
			obj, err := decodeStrict(doc)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s, document %d: %w", name, i+1, err))
				continue
			}
			if err := b.add(obj); err != nil {
				errs = append(errs, fmt.Errorf("%s, document %d: %w", name, i+1, err))
			}
		}
	}
	return b, errors.Join(errs...)
}

func addNamed[T any](m map[string]*T, kind, name string, obj *T) error {
	if name == "" {
		return fmt.Errorf("%s without a name", kind)
	}
	if _, dup := m[name]; dup {
		return fmt.Errorf("two %ss named %q", kind, name)
	}
	m[name] = obj
	return nil
}

func (b *bundle) add(obj runtime.Object) error {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return addNamed(b.deployments, "Deployment", o.Name, o)
	case *corev1.Service:
		return addNamed(b.services, "Service", o.Name, o)
	case *corev1.ConfigMap:
		return addNamed(b.configMaps, "ConfigMap", o.Name, o)
	case *corev1.Secret:
		return addNamed(b.secrets, "Secret", o.Name, o)
	case *corev1.ServiceAccount:
		return addNamed(b.serviceAccounts, "ServiceAccount", o.Name, o)
	case *rbacv1.Role:
		return addNamed(b.roles, "Role", o.Name, o)
	case *rbacv1.RoleBinding:
		return addNamed(b.roleBindings, "RoleBinding", o.Name, o)
	case *infv1.InferencePool:
		return addNamed(b.pools, "InferencePool", o.Name, o)
	case *gwv1.Gateway:
		return addNamed(b.gateways, "Gateway", o.Name, o)
	case *gwv1.HTTPRoute:
		return addNamed(b.routes, "HTTPRoute", o.Name, o)
	}
	return fmt.Errorf("%T: a kind these manifests should not hold", obj)
}

func readManifestFiles(t *testing.T) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(manifestDir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no manifests in %s (%v)", manifestDir, err)
	}
	files := map[string][]byte{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = raw
	}
	return files
}

func loadBundle(t *testing.T) *bundle {
	t.Helper()
	b, err := parseManifests(readManifestFiles(t))
	if err != nil {
		t.Fatalf("manifests: %v", err)
	}
	return b
}

// The manifests' documents, each decoded strictly into its published type.
func TestManifestsDecodeStrictly(t *testing.T) {
	b := loadBundle(t)
	counts := map[string]int{
		"Deployment": len(b.deployments), "Service": len(b.services), "ConfigMap": len(b.configMaps),
		"ServiceAccount": len(b.serviceAccounts), "Role": len(b.roles), "RoleBinding": len(b.roleBindings),
		"InferencePool": len(b.pools), "Gateway": len(b.gateways), "HTTPRoute": len(b.routes),
	}
	want := map[string]int{
		"Deployment": 2, "Service": 2, "ConfigMap": 1, "ServiceAccount": 1, "Role": 1,
		"RoleBinding": 1, "InferencePool": 1, "Gateway": 1, "HTTPRoute": 1,
	}
	for kind, n := range want {
		if counts[kind] != n {
			t.Errorf("%d %s objects, want %d", counts[kind], kind, n)
		}
	}
	// A few values read back, against what the files say, so that a decoder that dropped
	// fields would be caught.
	if d := b.deployments[serveName]; d == nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("Deployment %s: replicas not decoded as 2", serveName)
	}
	if p := b.pools[poolName]; p == nil || p.Spec.EndpointPickerRef.FailureMode != infv1.EndpointPickerFailOpen {
		t.Errorf("InferencePool %s: endpointPickerRef.failureMode not decoded as FailOpen", poolName)
	}
}

// Each way a document can be wrong is refused: the decoding is strict.
func TestManifestsStrictDecodingRefuses(t *testing.T) {
	files := readManifestFiles(t)
	for _, c := range []struct {
		name, file, old, new, want string
	}{
		{"unknown field", "serve.yaml", "  replicas: 2\n", "  replicas: 2\n  replicaz: 3\n", `unknown field "spec.replicaz"`},
		{"wrong type", "serve.yaml", "  replicas: 2\n", "  replicas: two\n", "replicas"},
		{"duplicate field", "serve.yaml", "  replicas: 2\n", "  replicas: 2\n  replicas: 3\n", "replicas"},
		{"unknown kind", "serve.yaml", "kind: Service\n", "kind: Servise\n", `no kind "Servise"`},
		{"unknown version", "inferencepool.yaml", "inference.networking.k8s.io/v1\n", "inference.networking.k8s.io/v2\n", "v2"},
		{"pool: unknown field", "inferencepool.yaml", "  targetPorts:\n", "  targetPortz:\n", `unknown field "spec.targetPortz"`},
		{"pool: wrong type", "inferencepool.yaml", "number: 8080", "number: eighty", "number"},
		{"route: unknown field", "gateway.yaml", "  parentRefs:\n", "  parentRefz:\n", `unknown field "spec.parentRefz"`},
		{"route: wrong type", "gateway.yaml", "port: 8080\n", "port: [8080]\n", "port"},
		{"rbac: unknown field", "epp.yaml", "    verbs: [\"get\", \"watch\", \"list\"]\n", "    verbz: [\"get\"]\n", `unknown field "rules[0].verbz"`},
		{"no kind", "inferencepool.yaml", "kind: InferencePool\n", "", "kind"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !bytes.Contains(files[c.file], []byte(c.old)) {
				t.Fatalf("%s no longer contains %q: update the test", c.file, c.old)
			}
			changed := map[string][]byte{}
			for k, v := range files {
				changed[k] = v
			}
			changed[c.file] = bytes.Replace(files[c.file], []byte(c.old), []byte(c.new), 1)
			_, err := parseManifests(changed)
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %q", err, c.want)
			}
		})
	}
}

// container returns the named container of a Deployment, or the only one.
func container(d *appsv1.Deployment, name string) (*corev1.Container, error) {
	for i := range d.Spec.Template.Spec.Containers {
		c := &d.Spec.Template.Spec.Containers[i]
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("Deployment %s: no container %q", d.Name, name)
}

// resolvePort gives the container port a probe, Service or route names, by number or name.
func resolvePort(c *corev1.Container, p intstr.IntOrString) (int32, error) {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("container %s has no port %s", c.Name, p.String())
}

// flagArgs parses args of the form -name=value or -name (a bool) into name → value
// ("" for a bare bool), in the order given; anything else is an error, as serve refuses
// positional arguments.
type flagArg struct{ name, value string }

func flagArgs(args []string) ([]flagArg, error) {
	var out []flagArg
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			return nil, fmt.Errorf("argument %q is not a flag", a)
		}
		name, value, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		out = append(out, flagArg{name, value})
	}
	return out, nil
}

func flagValue(args []flagArg, name string) (string, bool) {
	for i := len(args) - 1; i >= 0; i-- { // the last one wins, as in package flag
		if args[i].name == name {
			return args[i].value, true
		}
	}
	return "", false
}

// parseSize reads serve's -prefix-cache sizes: a number with an optional unit.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			n, err := strconv.ParseFloat(num, 64)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("size %q: not a number of %s", s, u.suffix)
			}
			return int64(n * float64(u.mult)), nil
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: not a size", s)
	}
	return n, nil
}

func (b *bundle) serveContainer() (*appsv1.Deployment, *corev1.Container, error) {
	d := b.deployments[serveName]
	if d == nil {
		return nil, nil, fmt.Errorf("no Deployment %s", serveName)
	}
	c, err := container(d, "serve")
	return d, c, err
}

// checkServeArgs: the flags are well formed, the sizing's inputs are given, and nothing
// shuts out the endpoint picker.
func (b *bundle) checkServeArgs() error {
	_, c, err := b.serveContainer()
	if err != nil {
		return err
	}
	args, err := flagArgs(c.Args)
	if err != nil {
		return err
	}
	var errs []error
	if v, ok := flagValue(args, "addr"); ok && v != fmt.Sprintf("0.0.0.0:%d", servePort) {
		errs = append(errs, fmt.Errorf("-addr %s: the image listens on 0.0.0.0:%d", v, servePort))
	}
	if v, ok := flagValue(args, "metrics-auth"); ok && v != "false" {
		errs = append(errs, errors.New("-metrics-auth: the endpoint picker scrapes /metrics without credentials"))
	}
	if v, ok := flagValue(args, "api-key"); ok {
		errs = append(errs, fmt.Errorf("-api-key %q in the manifest: take the key from the Secret (BONSAI_API_KEY)", v))
	}
	return errors.Join(errs...)
}

// checkResources recomputes the memory the server may use from its flags and the model.
func (b *bundle) checkResources() error {
	_, c, err := b.serveContainer()
	if err != nil {
		return err
	}
	args, err := flagArgs(c.Args)
	if err != nil {
		return err
	}
	intFlag := func(name string) (int64, error) {
		v, ok := flagValue(args, name)
		if !ok {
			return 0, fmt.Errorf("-%s is not given: the sizing depends on it", name)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("-%s %q: not a positive integer", name, v)
		}
		return n, nil
	}
	parallel, err1 := intFlag("parallel")
	context, err2 := intFlag("context")
	threads, err3 := intFlag("threads")
	prefixStr, ok := flagValue(args, "prefix-cache")
	var err4 error
	prefix := int64(2 << 30) // serve's default
	if ok {
		prefix, err4 = parseSize(prefixStr)
	}
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	need := modelFileBytes + parallel*context*kvBytesPerToken + prefix + overheadBytes
	var errs []error
	req, lim := c.Resources.Requests, c.Resources.Limits
	mem := lim.Memory()
	if mem.IsZero() {
		errs = append(errs, errors.New("no memory limit"))
	} else if mem.Value() < need {
		errs = append(errs, fmt.Errorf("memory limit %s < %.1f GiB: the model (%.2f GiB) + %d sessions × %d tokens × 64 KiB + prefix cache %s + 1 GiB",
			mem, float64(need)/(1<<30), float64(modelFileBytes)/(1<<30), parallel, context, prefixStr))
	}
	if req.Memory().Cmp(*mem) != 0 || req.Cpu().Cmp(*lim.Cpu()) != 0 {
		errs = append(errs, fmt.Errorf("requests (cpu %s, memory %s) differ from limits (cpu %s, memory %s): not Guaranteed QoS",
			req.Cpu(), req.Memory(), lim.Cpu(), lim.Memory()))
	}
	if cpu := lim.Cpu(); cpu.IsZero() || cpu.MilliValue() != threads*1000 {
		errs = append(errs, fmt.Errorf("-threads %d but a CPU limit of %s", threads, cpu))
	}
	// The emptyDir holding HF_HOME takes the file; ephemeral storage must cover it.
	var hfVolume *corev1.Volume
	d := b.deployments[serveName]
	hfHome := envValue(c, "HF_HOME")
	for _, m := range c.VolumeMounts {
		if hfHome != "" && (hfHome == m.MountPath || strings.HasPrefix(hfHome, m.MountPath+"/")) {
			for i := range d.Spec.Template.Spec.Volumes {
				if d.Spec.Template.Spec.Volumes[i].Name == m.Name {
					hfVolume = &d.Spec.Template.Spec.Volumes[i]
				}
			}
		}
	}
	switch {
	case hfHome == "":
		errs = append(errs, errors.New("no HF_HOME"))
	case hfVolume == nil:
		errs = append(errs, fmt.Errorf("HF_HOME %s is on no volume: the root file system is read-only", hfHome))
	case hfVolume.EmptyDir != nil:
		if size := hfVolume.EmptyDir.SizeLimit; size == nil || size.Value() < modelFileBytes {
			errs = append(errs, fmt.Errorf("emptyDir %s: sizeLimit %v holds not the %d-byte model", hfVolume.Name, size, int64(modelFileBytes)))
		}
	}
	// The pod's emptyDirs on disk count against its ephemeral storage: the limit must
	// hold them all.
	var disk resource.Quantity
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.Medium == corev1.StorageMediumMemory {
			continue
		}
		if v.EmptyDir.SizeLimit == nil {
			errs = append(errs, fmt.Errorf("emptyDir %s has no sizeLimit", v.Name))
			continue
		}
		disk.Add(*v.EmptyDir.SizeLimit)
	}
	if eph := lim.StorageEphemeral(); eph.Cmp(disk) < 0 {
		errs = append(errs, fmt.Errorf("ephemeral-storage limit %s is below the emptyDirs' %s", eph, &disk))
	}
	return errors.Join(errs...)
}

func envValue(c *corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// checkProbesAndGrace: liveness and startup on /health, readiness on /ready, all on the
// server's port, and a grace period that outlasts the drain.
func (b *bundle) checkProbesAndGrace() error {
	d, c, err := b.serveContainer()
	if err != nil {
		return err
	}
	var errs []error
	if p, err := resolvePort(c, intstr.FromInt32(servePort)); err != nil || p != servePort {
		errs = append(errs, fmt.Errorf("container port %d: %v", servePort, err))
	}
	for _, pr := range []struct {
		kind  string
		probe *corev1.Probe
		path  string
	}{{"startupProbe", c.StartupProbe, healthPath}, {"livenessProbe", c.LivenessProbe, healthPath}, {"readinessProbe", c.ReadinessProbe, readyPath}} {
		switch {
		case pr.probe == nil || pr.probe.HTTPGet == nil:
			errs = append(errs, fmt.Errorf("%s: none, or not an HTTP GET", pr.kind))
		case pr.probe.HTTPGet.Path != pr.path:
			errs = append(errs, fmt.Errorf("%s: path %s, want %s", pr.kind, pr.probe.HTTPGet.Path, pr.path))
		default:
			if p, err := resolvePort(c, pr.probe.HTTPGet.Port); err != nil || p != servePort {
				errs = append(errs, fmt.Errorf("%s: port %s is not the server's %d (%v)", pr.kind, pr.probe.HTTPGet.Port.String(), servePort, err))
			}
		}
	}
	// The startup probe must allow a download and a load: at least ten minutes.
	if sp := c.StartupProbe; sp != nil && time.Duration(sp.PeriodSeconds*sp.FailureThreshold)*time.Second < 10*time.Minute {
		errs = append(errs, fmt.Errorf("startupProbe allows %ds: too little to pull and load 7.2 GB", sp.PeriodSeconds*sp.FailureThreshold))
	}
	args, err := flagArgs(c.Args)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	drain := 30 * time.Second // serve's default -drain-timeout
	if v, ok := flagValue(args, "drain-timeout"); ok {
		if drain, err = time.ParseDuration(v); err != nil {
			errs = append(errs, fmt.Errorf("-drain-timeout %q: %v", v, err))
		}
	}
	var preStop time.Duration
	if lc := c.Lifecycle; lc != nil && lc.PreStop != nil && lc.PreStop.Sleep != nil {
		preStop = time.Duration(lc.PreStop.Sleep.Seconds) * time.Second
	}
	grace := d.Spec.Template.Spec.TerminationGracePeriodSeconds
	if grace == nil || time.Duration(*grace)*time.Second <= drain+preStop {
		g := "the default 30s"
		if grace != nil {
			g = fmt.Sprintf("%ds", *grace)
		}
		errs = append(errs, fmt.Errorf("terminationGracePeriodSeconds %s does not outlast the preStop pause %v and -drain-timeout %v", g, preStop, drain))
	}
	return errors.Join(errs...)
}

// selects reports whether a Service's or pool's label set picks a Deployment's pods.
func selects(sel map[string]string, d *appsv1.Deployment) bool {
	return len(sel) > 0 && labels.SelectorFromSet(sel).Matches(labels.Set(d.Spec.Template.Labels))
}

// checkSelectors: each Deployment's selector, the Services and the pool select the pods
// they mean to, on the ports the containers open.
func (b *bundle) checkSelectors() error {
	var errs []error
	for name, d := range b.deployments {
		if d.Spec.Selector == nil || !selects(d.Spec.Selector.MatchLabels, d) || len(d.Spec.Selector.MatchExpressions) > 0 {
			errs = append(errs, fmt.Errorf("Deployment %s: its selector does not select its own pods", name))
		}
	}
	serve, c, err := b.serveContainer()
	if err != nil {
		return err
	}
	pool := b.pools[poolName]
	if pool == nil {
		return errors.Join(append(errs, fmt.Errorf("no InferencePool %s", poolName))...)
	}
	ml := map[string]string{}
	for k, v := range pool.Spec.Selector.MatchLabels {
		ml[string(k)] = string(v)
	}
	if !selects(ml, serve) {
		errs = append(errs, fmt.Errorf("InferencePool %s: selector %v does not select the pods of %s (%v)", poolName, ml, serveName, serve.Spec.Template.Labels))
	}
	for name, d := range b.deployments {
		if d != serve && selects(ml, d) {
			errs = append(errs, fmt.Errorf("InferencePool %s also selects the pods of %s", poolName, name))
		}
	}
	if len(pool.Spec.TargetPorts) != 1 || int32(pool.Spec.TargetPorts[0].Number) != servePort {
		errs = append(errs, fmt.Errorf("InferencePool %s: targetPorts %v, want [%d]", poolName, pool.Spec.TargetPorts, servePort))
	} else if _, err := resolvePort(c, intstr.FromInt32(int32(pool.Spec.TargetPorts[0].Number))); err != nil {
		errs = append(errs, fmt.Errorf("InferencePool %s: %w", poolName, err))
	}
	// Services: each selects one Deployment's pods, and its target ports are their ports.
	for name, s := range b.services {
		var target *appsv1.Deployment
		for _, d := range b.deployments {
			if selects(s.Spec.Selector, d) {
				target = d
			}
		}
		if target == nil {
			errs = append(errs, fmt.Errorf("Service %s selects no Deployment's pods", name))
			continue
		}
		for _, p := range s.Spec.Ports {
			ok := false
			for i := range target.Spec.Template.Spec.Containers {
				if _, err := resolvePort(&target.Spec.Template.Spec.Containers[i], p.TargetPort); err == nil {
					ok = true
				}
			}
			if !ok {
				errs = append(errs, fmt.Errorf("Service %s: port %s targets no port of %s", name, p.Name, target.Name))
			}
		}
	}
	// The pool's endpoint picker: a Service in the manifests, on the picker's gRPC port.
	ref := pool.Spec.EndpointPickerRef
	svc := b.services[string(ref.Name)]
	switch {
	case ref.Group != nil && *ref.Group != "", ref.Kind != "" && ref.Kind != "Service":
		errs = append(errs, fmt.Errorf("InferencePool %s: endpointPickerRef is not a core Service", poolName))
	case svc == nil:
		errs = append(errs, fmt.Errorf("InferencePool %s: endpointPickerRef names Service %q, which the manifests lack", poolName, ref.Name))
	case ref.Port == nil:
		errs = append(errs, fmt.Errorf("InferencePool %s: endpointPickerRef has no port", poolName))
	default:
		epp := b.deployments[eppName]
		found := false
		for _, p := range svc.Spec.Ports {
			if p.Port == int32(ref.Port.Number) && epp != nil && selects(svc.Spec.Selector, epp) {
				if c, err := container(epp, "epp"); err == nil {
					if n, err := resolvePort(c, p.TargetPort); err == nil && n == eppGRPCPort {
						found = true
					}
				}
			}
		}
		if !found {
			errs = append(errs, fmt.Errorf("InferencePool %s: endpointPickerRef %s:%d does not reach the picker's gRPC port %d", poolName, ref.Name, ref.Port.Number, eppGRPCPort))
		}
	}
	return errors.Join(errs...)
}

// checkRBAC: the picker's ServiceAccount exists and may read pods and pools.
func (b *bundle) checkRBAC() error {
	epp := b.deployments[eppName]
	if epp == nil {
		return fmt.Errorf("no Deployment %s", eppName)
	}
	sa := epp.Spec.Template.Spec.ServiceAccountName
	if b.serviceAccounts[sa] == nil {
		return fmt.Errorf("Deployment %s runs as ServiceAccount %q, which the manifests lack", eppName, sa)
	}
	need := map[string]bool{"/pods": false, infv1.GroupName + "/inferencepools": false}
	for _, rb := range b.roleBindings {
		bound := false
		for _, s := range rb.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == sa {
				bound = true
			}
		}
		role := b.roles[rb.RoleRef.Name]
		if !bound || rb.RoleRef.Kind != "Role" || role == nil {
			continue
		}
		for _, r := range role.Rules {
			if !slices.Contains(r.Verbs, "get") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
				continue
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					if _, ok := need[g+"/"+res]; ok {
						need[g+"/"+res] = true
					}
				}
			}
		}
	}
	var errs []error
	for what, ok := range need {
		if !ok {
			errs = append(errs, fmt.Errorf("ServiceAccount %s may not get, list and watch %s", sa, what))
		}
	}
	return errors.Join(errs...)
}

// checkSecrets: every Secret the server needs (a non-optional reference) is created by
// the deploy README's kubectl command, under the same key.
func (b *bundle) checkSecrets(readme string) error {
	_, c, err := b.serveContainer()
	if err != nil {
		return err
	}
	created := map[string]bool{}
	re := regexp.MustCompile(`kubectl(?: -n \S+)? create secret generic (\S+)((?: +--from-(?:literal|file)=[^= ]+=\S+)+)`)
	keyRe := regexp.MustCompile(`--from-(?:literal|file)=([^= ]+)=`)
	for _, m := range re.FindAllStringSubmatch(readme, -1) {
		for _, k := range keyRe.FindAllStringSubmatch(m[2], -1) {
			created[m[1]+"/"+k[1]] = true
		}
	}
	var errs []error
	n := 0
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref.Optional != nil && *ref.Optional {
			continue
		}
		n++
		if !created[ref.Name+"/"+ref.Key] && b.secrets[ref.Name] == nil {
			errs = append(errs, fmt.Errorf("%s comes from Secret %s key %s, which neither the manifests nor README.md create", e.Name, ref.Name, ref.Key))
		}
	}
	if n == 0 {
		errs = append(errs, errors.New("no required Secret: the API key must come from one"))
	}
	if src := envSource(c, "BONSAI_API_KEY"); src == nil || src.SecretKeyRef == nil {
		errs = append(errs, errors.New("BONSAI_API_KEY does not come from a Secret"))
	}
	return errors.Join(errs...)
}

func envSource(c *corev1.Container, name string) *corev1.EnvVarSource {
	for _, e := range c.Env {
		if e.Name == name {
			return e.ValueFrom
		}
	}
	return nil
}

// routeBackend gives the backend a request path goes to through the HTTPRoutes, by the
// Gateway API's precedence: an exact match, then the longest prefix.
func (b *bundle) routeBackend(reqPath string) (gwv1.BackendRef, bool) {
	bestLen, bestExact := -1, false
	var best gwv1.BackendRef
	for _, r := range b.routes {
		for _, rule := range r.Spec.Rules {
			for _, m := range rule.Matches {
				if m.Path == nil || m.Path.Value == nil || m.Path.Type == nil || len(rule.BackendRefs) == 0 {
					continue
				}
				v := *m.Path.Value
				var exact bool
				switch *m.Path.Type {
				case gwv1.PathMatchExact:
					if reqPath != v {
						continue
					}
					exact = true
				case gwv1.PathMatchPathPrefix:
					p := strings.TrimSuffix(v, "/")
					if reqPath != p && !strings.HasPrefix(reqPath, p+"/") && v != "/" {
						continue
					}
				default:
					continue
				}
				if (exact && !bestExact) || (exact == bestExact && len(v) > bestLen) {
					bestLen, bestExact, best = len(v), exact, rule.BackendRefs[0].BackendRef
				}
			}
		}
	}
	return best, bestLen >= 0
}

// checkRoutes: the Gateway exists, and each API path goes where it should.
func (b *bundle) checkRoutes() error {
	var errs []error
	for name, r := range b.routes {
		for _, p := range r.Spec.ParentRefs {
			if (p.Kind != nil && *p.Kind != "Gateway") || b.gateways[string(p.Name)] == nil {
				errs = append(errs, fmt.Errorf("HTTPRoute %s: parent %s is not a Gateway of the manifests", name, p.Name))
			}
		}
	}
	for _, c := range []struct {
		path, kind, name string
	}{
		{"/v1/chat/completions", "InferencePool", poolName},
		{"/v1/completions", "InferencePool", poolName},
		{"/v1/messages", "Service", serveName},
		{"/v1/models", "Service", serveName},
		{"/metrics", "", ""},
		{"/", "", ""},
	} {
		ref, ok := b.routeBackend(c.path)
		kind := ""
		if ok {
			kind = "Service"
			if ref.Kind != nil {
				kind = string(*ref.Kind)
			}
		}
		if kind != c.kind || (ok && string(ref.Name) != c.name) {
			errs = append(errs, fmt.Errorf("%s goes to %s %q, want %s %q", c.path, kind, ref.Name, c.kind, c.name))
			continue
		}
		switch kind {
		case "InferencePool":
			if ref.Group == nil || string(*ref.Group) != infv1.GroupName || b.pools[c.name] == nil {
				errs = append(errs, fmt.Errorf("%s: backend %s is not the InferencePool of the manifests", c.path, c.name))
			}
		case "Service":
			svc := b.services[c.name]
			if svc == nil || ref.Port == nil || !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == int32(*ref.Port) }) {
				errs = append(errs, fmt.Errorf("%s: backend Service %s has no such port", c.path, c.name))
			}
		}
	}
	return errors.Join(errs...)
}

func TestManifestsCrossReferences(t *testing.T) {
	b := loadBundle(t)
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, check := range map[string]func() error{
		"serve args":       b.checkServeArgs,
		"resources":        b.checkResources,
		"probes and grace": b.checkProbesAndGrace,
		"selectors":        b.checkSelectors,
		"rbac":             b.checkRBAC,
		"secrets":          func() error { return b.checkSecrets(string(readme)) },
		"routes":           b.checkRoutes,
		"epp":              b.checkEPP,
	} {
		if err := check(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Each cross-reference check fails when the manifests are wrong in its way.
func TestManifestsCrossReferenceChecksFail(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	serveC := func(b *bundle) *corev1.Container { _, c, _ := b.serveContainer(); return c }
	setArg := func(b *bundle, name, value string) {
		c := serveC(b)
		for i, a := range c.Args {
			if n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); n == name {
				c.Args[i] = "-" + name + "=" + value
				return
			}
		}
		c.Args = append(c.Args, "-"+name+"="+value)
	}
	for _, c := range []struct {
		name   string
		break_ func(b *bundle)
		check  func(b *bundle) error
		want   string
	}{
		{"metrics auth", func(b *bundle) { setArg(b, "metrics-auth", "true") }, (*bundle).checkServeArgs, "-metrics-auth"},
		{"positional arg", func(b *bundle) { c := serveC(b); c.Args = append(c.Args, "model.gguf") }, (*bundle).checkServeArgs, "not a flag"},
		{"wrong addr", func(b *bundle) { setArg(b, "addr", "127.0.0.1:8080") }, (*bundle).checkServeArgs, "-addr"},
		{"too many sessions", func(b *bundle) { setArg(b, "parallel", "8") }, (*bundle).checkResources, "memory limit"},
		{"bigger prefix cache", func(b *bundle) { setArg(b, "prefix-cache", "8GiB") }, (*bundle).checkResources, "memory limit"},
		{"threads off the limit", func(b *bundle) { setArg(b, "threads", "16") }, (*bundle).checkResources, "-threads 16"},
		{"no context", func(b *bundle) {
			c := serveC(b)
			c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "-context=") })
		}, (*bundle).checkResources, "-context is not given"},
		{"burstable", func(b *bundle) { serveC(b).Resources.Requests[corev1.ResourceMemory] = resource.MustParse("8Gi") }, (*bundle).checkResources, "not Guaranteed"},
		{"small emptyDir", func(b *bundle) {
			q := resource.MustParse("5Gi")
			b.deployments[serveName].Spec.Template.Spec.Volumes[0].EmptyDir.SizeLimit = &q
		}, (*bundle).checkResources, "sizeLimit"},
		{"ephemeral storage", func(b *bundle) {
			serveC(b).Resources.Limits[corev1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
		}, (*bundle).checkResources, "ephemeral-storage"},
		{"ephemeral storage for /tmp", func(b *bundle) {
			q := resource.MustParse("2Gi")
			b.deployments[serveName].Spec.Template.Spec.Volumes[1].EmptyDir.SizeLimit = &q
		}, (*bundle).checkResources, "below the emptyDirs' 12Gi"},
		{"HF_HOME off the volume", func(b *bundle) {
			c := serveC(b)
			for i := range c.Env {
				if c.Env[i].Name == "HF_HOME" {
					c.Env[i].Value = "/home/hf"
				}
			}
		}, (*bundle).checkResources, "on no volume"},
		{"readiness on /health", func(b *bundle) { serveC(b).ReadinessProbe.HTTPGet.Path = "/health" }, (*bundle).checkProbesAndGrace, "readinessProbe: path /health"},
		{"liveness on /ready", func(b *bundle) { serveC(b).LivenessProbe.HTTPGet.Path = "/ready" }, (*bundle).checkProbesAndGrace, "livenessProbe: path /ready"},
		{"probe port", func(b *bundle) { serveC(b).ReadinessProbe.HTTPGet.Port = intstr.FromInt32(9090) }, (*bundle).checkProbesAndGrace, "readinessProbe: port 9090"},
		{"short startup", func(b *bundle) { serveC(b).StartupProbe.FailureThreshold = 6 }, (*bundle).checkProbesAndGrace, "startupProbe allows 60s"},
		{"short grace", func(b *bundle) {
			g := int64(30)
			b.deployments[serveName].Spec.Template.Spec.TerminationGracePeriodSeconds = &g
		}, (*bundle).checkProbesAndGrace, "terminationGracePeriodSeconds 30s"},
		{"long drain", func(b *bundle) { setArg(b, "drain-timeout", "2m") }, (*bundle).checkProbesAndGrace, "-drain-timeout 2m0s"},
		{"pool selector", func(b *bundle) {
			b.pools[poolName].Spec.Selector.MatchLabels["app.kubernetes.io/name"] = "vllm"
		}, (*bundle).checkSelectors, "does not select the pods"},
		{"pool port", func(b *bundle) { b.pools[poolName].Spec.TargetPorts[0].Number = 8000 }, (*bundle).checkSelectors, "targetPorts"},
		{"pool picker name", func(b *bundle) { b.pools[poolName].Spec.EndpointPickerRef.Name = "epp" }, (*bundle).checkSelectors, `Service "epp"`},
		{"pool picker port", func(b *bundle) { b.pools[poolName].Spec.EndpointPickerRef.Port.Number = 9090 }, (*bundle).checkSelectors, "gRPC port"},
		{"pod labels", func(b *bundle) {
			delete(b.deployments[serveName].Spec.Template.Labels, "app.kubernetes.io/component")
		}, (*bundle).checkSelectors, "its own pods"},
		{"service port", func(b *bundle) { b.services[serveName].Spec.Ports[0].TargetPort = intstr.FromString("web") }, (*bundle).checkSelectors, "targets no port"},
		{"service account", func(b *bundle) { delete(b.serviceAccounts, eppName) }, (*bundle).checkRBAC, "lack"},
		{"role rules", func(b *bundle) { b.roles[eppName].Rules = b.roles[eppName].Rules[:1] }, (*bundle).checkRBAC, "inferencepools"},
		{"binding", func(b *bundle) { b.roleBindings[eppName].Subjects[0].Name = "default" }, (*bundle).checkRBAC, "may not"},
		{"secret name", func(b *bundle) { envSource(serveC(b), "BONSAI_API_KEY").SecretKeyRef.Name = "other" }, func(b *bundle) error { return b.checkSecrets(string(readme)) }, "Secret other"},
		{"secret key", func(b *bundle) { envSource(serveC(b), "BONSAI_API_KEY").SecretKeyRef.Key = "key" }, func(b *bundle) error { return b.checkSecrets(string(readme)) }, "key key"},
		{"key in the manifest", func(b *bundle) {
			c := serveC(b)
			for i := range c.Env {
				if c.Env[i].Name == "BONSAI_API_KEY" {
					c.Env[i] = corev1.EnvVar{Name: "BONSAI_API_KEY", Value: "sk-plain"}
				}
			}
		}, func(b *bundle) error { return b.checkSecrets(string(readme)) }, "does not come from a Secret"},
		{"route to the pool", func(b *bundle) { b.routes[routeName].Spec.Rules[0].BackendRefs[0].Name = "other" }, (*bundle).checkRoutes, `/v1/chat/completions goes to InferencePool "other"`},
		{"messages to the pool", func(b *bundle) {
			b.routes[routeName].Spec.Rules[1].BackendRefs = b.routes[routeName].Spec.Rules[0].BackendRefs
		}, (*bundle).checkRoutes, "/v1/messages goes to InferencePool"},
		{"gateway", func(b *bundle) { delete(b.gateways, "bonsai-gateway") }, (*bundle).checkRoutes, "not a Gateway"},
		{"service backend port", func(b *bundle) {
			p := gwv1.PortNumber(80)
			b.routes[routeName].Spec.Rules[1].BackendRefs[0].Port = &p
		}, (*bundle).checkRoutes, "no such port"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := loadBundle(t)
			if err := c.check(b); err != nil {
				t.Fatalf("fails before the change: %v", err)
			}
			c.break_(b)
			err := c.check(b)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// ---- The endpoint picker: its flags and its configuration, through its own code. ----

var registerEPPPlugins = sync.OnceFunc(func() {
	// What cmd/epp's runner registers (registerInTreePlugins, parseConfigurationPhaseOne)
	// for the plugins this configuration and the loader's defaults use.
	loader.RegisterFeatureGate(datalayer.ExperimentalDatalayerFeatureGate)
	loader.RegisterFeatureGate(datalayer.EnableLegacyMetricsFeatureGate)
	loader.RegisterFeatureGate(flowcontrol.FeatureGate)
	fwkplugin.Register(prefix.PrefixCacheScorerPluginType, prefix.PrefixCachePluginFactory)
	fwkplugin.Register(picker.MaxScorePickerType, picker.MaxScorePickerFactory)
	fwkplugin.Register(picker.RandomPickerType, picker.RandomPickerFactory)
	fwkplugin.Register(picker.WeightedRandomPickerType, picker.WeightedRandomPickerFactory)
	fwkplugin.Register(profile.SingleProfileHandlerType, profile.SingleProfileHandlerFactory)
	fwkplugin.Register(kvcacheutilization.KvCacheUtilizationScorerType, kvcacheutilization.KvCacheUtilizationScorerFactory)
	fwkplugin.Register(queuedepth.QueueScorerType, queuedepth.QueueScorerFactory)
	fwkplugin.Register(runningrequests.RunningRequestsSizeScorerType, runningrequests.RunningRequestsSizeScorerFactory)
	fwkplugin.Register(fairness.GlobalStrictFairnessPolicyType, fairness.GlobalStrictFairnessPolicyFactory)
	fwkplugin.Register(fairness.RoundRobinFairnessPolicyType, fairness.RoundRobinFairnessPolicyFactory)
	fwkplugin.Register(ordering.FCFSOrderingPolicyType, ordering.FCFSOrderingPolicyFactory)
	fwkplugin.Register(ordering.EDFOrderingPolicyType, ordering.EDFOrderingPolicyFactory)
	fwkplugin.Register(usagelimits.StaticUsageLimitPolicyType, usagelimits.StaticPolicyFactory)
	fwkplugin.Register(reqdataprodprefix.ApproxPrefixCachePluginType, reqdataprodprefix.ApproxPrefixCacheFactory)
	fwkplugin.Register(sourcemetrics.MetricsDataSourceType, sourcemetrics.MetricsDataSourceFactory)
	fwkplugin.Register(extractormetrics.MetricsExtractorType, extractormetrics.CoreMetricsExtractorFactory)
	fwkplugin.Register(openai.OpenAIParserType, openai.OpenAIParserPluginFactory)
	fwkplugin.Register(passthrough.PassthroughParserType, passthrough.PassthroughParserPluginFactory)
	fwkplugin.Register(concurrency.ConcurrencyDetectorType, concurrency.ConcurrencyDetectorFactory)
	fwkplugin.Register(utilization.UtilizationDetectorType, utilization.UtilizationDetectorFactory)
})

// engineConfig mirrors the core-metrics-extractor's parameters (unexported in
// pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go, v1.5.0): decoded
// strictly here so that a misspelt key, which the picker's own json.Unmarshal would
// ignore (leaving a vLLM default in force), is caught.
type extractorParams struct {
	EngineLabelKey string `json:"engineLabelKey"`
	DefaultEngine  string `json:"defaultEngine"`
	EngineConfigs  []struct {
		Name                    string `json:"name"`
		QueuedRequestsSpec      string `json:"queuedRequestsSpec"`
		RunningRequestsSpec     string `json:"runningRequestsSpec"`
		KVUsageSpec             string `json:"kvUsageSpec"`
		LoRASpec                string `json:"loraSpec"`
		CacheInfoSpec           string `json:"cacheInfoSpec"`
		CacheBlockSizeLabelName string `json:"cacheBlockSizeLabelName,omitempty"`
		CacheNumBlocksLabelName string `json:"cacheNumBlocksLabelName,omitempty"`
		CacheBlockSizeSpec      string `json:"cacheBlockSizeSpec,omitempty"`
		CacheNumBlocksSpec      string `json:"cacheNumBlocksSpec,omitempty"`
	} `json:"engineConfigs"`
}

// eppConfig finds the picker's configuration: the ConfigMap key its --config-file names
// through its volume mount.
func (b *bundle) eppConfig(opts *eppserver.Options, c *corev1.Container, d *appsv1.Deployment) ([]byte, error) {
	if opts.ConfigFile == "" {
		return nil, errors.New("--config-file is not given: the picker would run on its vLLM defaults")
	}
	dir, file := path.Split(opts.ConfigFile)
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) != path.Clean(dir) {
			continue
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			cm := b.configMaps[v.ConfigMap.Name]
			if cm == nil {
				return nil, fmt.Errorf("volume %s: ConfigMap %s is not in the manifests", v.Name, v.ConfigMap.Name)
			}
			data, ok := cm.Data[file]
			if !ok {
				return nil, fmt.Errorf("ConfigMap %s has no key %s (--config-file %s)", cm.Name, file, opts.ConfigFile)
			}
			return []byte(data), nil
		}
	}
	return nil, fmt.Errorf("--config-file %s is on no ConfigMap volume", opts.ConfigFile)
}

// parseEPPArgs parses the picker's arguments with its own flag set and validation.
func parseEPPArgs(args []string) (*eppserver.Options, error) {
	opts := eppserver.NewOptions()
	fs := pflag.NewFlagSet("epp", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := opts.Complete(); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return opts, nil
}

// loadEPPConfig runs the picker's own loader over the configuration: strict decoding,
// then every plugin built from its parameters, the defaults added and the whole
// validated, as the picker does at start-up.
func loadEPPConfig(raw []byte) error {
	registerEPPPlugins()
	logger := logr.Discard()
	cfg, _, err := loader.LoadRawConfig(raw, logger)
	if err != nil {
		return err
	}
	handle := fwkplugin.NewEppHandle(context.Background(), func() []types.NamespacedName { return nil })
	_, err = loader.InstantiateAndConfigure(cfg, handle, logger)
	return err
}

// checkEPPMetrics: the core-metrics-extractor names serve's metrics, under the engine the
// serve pods are labelled with.
func checkEPPMetrics(raw []byte, podLabels map[string]string) error {
	cfg, _, err := loader.LoadRawConfig(raw, logr.Discard())
	if err != nil {
		return err
	}
	var found *extractorParams
	for _, p := range cfg.Plugins {
		if p.Type != extractormetrics.MetricsExtractorType {
			continue
		}
		var params extractorParams
		dec := json.NewDecoder(bytes.NewReader(p.Parameters))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&params); err != nil {
			return fmt.Errorf("%s parameters: %w", p.Type, err)
		}
		found = &params
	}
	if found == nil {
		return fmt.Errorf("no %s plugin: the picker would read vLLM's names by default, not ours by name", extractormetrics.MetricsExtractorType)
	}
	var errs []error
	labelKey := cmpOr(found.EngineLabelKey, extractormetrics.DefaultEngineTypeLabelKey)
	if podLabels[labelKey] != found.DefaultEngine || found.DefaultEngine == "" {
		errs = append(errs, fmt.Errorf("the serve pods' label %s=%q is not the defaultEngine %q", labelKey, podLabels[labelKey], found.DefaultEngine))
	}
	n := 0
	for _, e := range found.EngineConfigs {
		if e.Name != found.DefaultEngine {
			continue
		}
		n++
		for _, m := range []struct{ what, got, want string }{
			{"queuedRequestsSpec", e.QueuedRequestsSpec, metricQueued},
			{"runningRequestsSpec", e.RunningRequestsSpec, metricRunning},
			{"kvUsageSpec", e.KVUsageSpec, metricKVUsage},
			{"cacheInfoSpec", e.CacheInfoSpec, metricCacheInfo},
			{"loraSpec", e.LoRASpec, ""}, // serve has no LoRA adapters
		} {
			if m.got != m.want {
				errs = append(errs, fmt.Errorf("engine %s: %s %q, want %q", e.Name, m.what, m.got, m.want))
			}
		}
	}
	if n != 1 {
		errs = append(errs, fmt.Errorf("%d engineConfigs named %q, want 1", n, found.DefaultEngine))
	}
	return errors.Join(errs...)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// checkEPP: the picker's flags parse and validate as its own code does them, name the pool,
// and its configuration loads and names our metrics.
func (b *bundle) checkEPP() error {
	d := b.deployments[eppName]
	if d == nil {
		return fmt.Errorf("no Deployment %s", eppName)
	}
	c, err := container(d, "epp")
	if err != nil {
		return err
	}
	opts, err := parseEPPArgs(c.Args)
	if err != nil {
		return fmt.Errorf("epp args: %w", err)
	}
	var errs []error
	if opts.PoolName != poolName || opts.PoolGroup != infv1.GroupName {
		errs = append(errs, fmt.Errorf("--pool-name %q --pool-group %q: not the InferencePool %s.%s", opts.PoolName, opts.PoolGroup, poolName, infv1.GroupName))
	}
	if opts.GRPCPort != eppGRPCPort {
		errs = append(errs, fmt.Errorf("--grpc-port %d, want %d", opts.GRPCPort, eppGRPCPort))
	}
	if opts.PoolNamespace == "" && envSource(c, "NAMESPACE") == nil {
		errs = append(errs, errors.New("neither --pool-namespace nor NAMESPACE: the picker cannot find the pool"))
	}
	raw, err := b.eppConfig(opts, c, d)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if err := loadEPPConfig(raw); err != nil {
		errs = append(errs, fmt.Errorf("the picker's loader refuses its configuration: %w", err))
	}
	if serve := b.deployments[serveName]; serve != nil {
		if err := checkEPPMetrics(raw, serve.Spec.Template.Labels); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// The picker's flags and configuration are refused, through its own code, when wrong.
func TestEPPChecksFail(t *testing.T) {
	b := loadBundle(t)
	raw := []byte(b.configMaps[eppName].Data["config.yaml"])
	podLabels := b.deployments[serveName].Spec.Template.Labels
	if err := loadEPPConfig(raw); err != nil {
		t.Fatalf("the configuration as shipped: %v", err)
	}
	for _, c := range []struct{ name, old, new, want string }{
		{"unknown field", "schedulingProfiles:\n", "schedulingProfilez:\n", "unknown field"},
		{"unknown plugin", "- type: queue-scorer\n", "- type: queue-scorerr\n", "not registered"},
		{"bad metric spec", "queuedRequestsSpec: vllm:num_requests_waiting", "queuedRequestsSpec: vllm:num_requests_waiting{", "mapping for engine"},
		{"unknown engine", "defaultEngine: bonsai", "defaultEngine: bonsaii", "defaultEngine"},
		{"unknown profile plugin", "- pluginRef: prefix-cache-scorer\n", "- pluginRef: prefix-scorer\n", "prefix-scorer"},
	} {
		t.Run("loader/"+c.name, func(t *testing.T) {
			bad := bytes.Replace(raw, []byte(c.old), []byte(c.new), 1)
			if bytes.Equal(bad, raw) {
				t.Fatalf("the configuration no longer contains %q", c.old)
			}
			err := loadEPPConfig(bad)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
	for _, c := range []struct{ name, old, new, want string }{
		{"other metric", "kvUsageSpec: vllm:kv_cache_usage_perc", "kvUsageSpec: vllm:gpu_cache_usage_perc", "kvUsageSpec"},
		{"misspelt key", "cacheInfoSpec:", "cacheInfoSpek:", "unknown field"},
		{"engine label", "defaultEngine: bonsai", "defaultEngine: vllm", "defaultEngine"},
		{"no extractor", "type: core-metrics-extractor", "type: metrics-extractor", "no core-metrics-extractor"},
	} {
		t.Run("metrics/"+c.name, func(t *testing.T) {
			bad := bytes.Replace(raw, []byte(c.old), []byte(c.new), 1)
			if bytes.Equal(bad, raw) {
				t.Fatalf("the configuration no longer contains %q", c.old)
			}
			err := checkEPPMetrics(bad, podLabels)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
	args := b.deployments[eppName].Spec.Template.Spec.Containers[0].Args
	for _, c := range []struct {
		name  string
		extra []string
		want  string
	}{
		// v1.5 refuses the older metric-name flags: engineConfigs is the way.
		{"deprecated metric flag", []string{"--total-queued-requests-metric=vllm:num_requests_waiting"}, "deprecated"},
		{"unknown flag", []string{"--pool-nam=bonsai"}, "unknown flag"},
		{"selector and pool", []string{"--endpoint-selector=app=bonsai"}, "either pool-name or endpoint-selector"},
		{"wrong type", []string{"--grpc-port=ext-proc"}, "grpc-port"},
	} {
		t.Run("flags/"+c.name, func(t *testing.T) {
			_, err := parseEPPArgs(append(slices.Clone(args), c.extra...))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
	t.Run("config file", func(t *testing.T) {
		b := loadBundle(t)
		c := &b.deployments[eppName].Spec.Template.Spec.Containers[0]
		for i, a := range c.Args {
			if strings.HasPrefix(a, "--config-file=") {
				c.Args[i] = "--config-file=/config/plugins.yaml"
			}
		}
		if err := b.checkEPP(); err == nil || !strings.Contains(err.Error(), "no key plugins.yaml") {
			t.Errorf("got %v, want the missing key named", err)
		}
		delete(b.configMaps, eppName)
		if err := b.checkEPP(); err == nil || !strings.Contains(err.Error(), "not in the manifests") {
			t.Errorf("got %v, want the missing ConfigMap named", err)
		}
	})
	t.Run("pool name", func(t *testing.T) {
		b := loadBundle(t)
		c := &b.deployments[eppName].Spec.Template.Spec.Containers[0]
		c.Args[0] = "--pool-name=other"
		if err := b.checkEPP(); err == nil || !strings.Contains(err.Error(), `--pool-name "other"`) {
			t.Errorf("got %v, want the pool name named", err)
		}
	})
}
