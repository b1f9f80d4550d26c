package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The deploy artefacts, started as they are written. There is no container
// engine or Kubernetes here, so each test reads the command line, the
// environment and the config from the repository's files (the Dockerfile,
// docs/operations.md's `docker run` lines, deploy/agones/*.yaml) — so they
// cannot drift from what is tested — and runs the sparkhost binary with
// them as a process, changing only what a container or a pod provides and
// a test machine cannot:
//
//   - paths inside the image (/etc/sparkhost/config.toml, the volume
//     /data) become files in a temporary directory;
//   - the fixed ports (27015 for the game, 9150 for the ops listener,
//     published or mapped by the engine) become free ones (port 0),
//     addresses unchanged: the game port still binds "::", the ops
//     listener "0.0.0.0", in internet mode;
//   - the pod's IP ($(POD_IP), status.podIP) becomes 127.0.0.1, and the
//     Agones SDK sidecar a stand-in on 127.0.0.1 whose port goes into
//     AGONES_SDK_HTTP_PORT, as Agones sets it in the pod.
//
// Everything else — arguments, environment, every other config key — is
// the files'. Tests only ever send to 127.0.0.1.

// repoFile reads a file of the repository (the test runs in cmd/sparkhost).
func repoFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dockerfileArray returns the JSON array of the Dockerfile instruction
// (ENTRYPOINT, CMD, or HEALTHCHECK's CMD), backslash continuations joined.
func dockerfileArray(t *testing.T, dockerfile []byte, instruction string) []string {
	t.Helper()
	text := strings.ReplaceAll(string(dockerfile), "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, instruction+" ") {
			continue
		}
		i := strings.Index(line, "[")
		if instruction == "HEALTHCHECK" {
			i = strings.Index(line, "CMD [") + len("CMD ")
		}
		var arr []string
		if err := json.Unmarshal([]byte(line[i:]), &arr); err != nil {
			t.Fatalf("Dockerfile %s: %v", instruction, err)
		}
		return arr
	}
	t.Fatalf("the Dockerfile has no %s", instruction)
	return nil
}

// dockerfileCopyTo returns where the Dockerfile copies src into the image.
func dockerfileCopyTo(t *testing.T, dockerfile []byte, src string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^COPY ` + regexp.QuoteMeta(src) + ` (\S+)$`).FindSubmatch(dockerfile)
	if m == nil {
		t.Fatalf("the Dockerfile does not COPY %s", src)
	}
	return string(m[1])
}

// docsDockerRuns returns the `docker run` commands of docs/operations.md
// as argument lists, continuations joined.
func docsDockerRuns(t *testing.T) [][]string {
	t.Helper()
	text := strings.ReplaceAll(string(repoFile(t, "docs/operations.md")), "\\\n", " ")
	var out [][]string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "docker run ") {
			out = append(out, strings.Fields(line))
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/operations.md has no docker run")
	}
	return out
}

// dockerRunParts splits a `docker run` into its environment (-e) and the
// arguments after the image name ("sparkhost").
func dockerRunParts(t *testing.T, words []string) (env, args []string) {
	t.Helper()
	for i := 2; i < len(words); i++ {
		switch w := words[i]; {
		case w == "-e" || w == "--env":
			i++
			env = append(env, words[i])
		case w == "-p" || w == "-v":
			i++
		case strings.HasPrefix(w, "-"):
		case w == "sparkhost":
			return env, words[i+1:]
		default:
			t.Fatalf("docker run: unexpected %q in %q", w, words)
		}
	}
	t.Fatalf("docker run without the image: %q", words)
	return nil, nil
}

// containerConfig writes a container config (TOML) into dir with the
// substitutions of the comment above: data_dir → dir/data, the game port
// and the ops listener's port → 0.
func containerConfig(t *testing.T, dir, text string) string {
	t.Helper()
	text = strings.Replace(text, `data_dir = "/data"`, fmt.Sprintf("data_dir = %q\nport = 0", filepath.Join(dir, "data")), 1)
	text = strings.Replace(text, `listen = "0.0.0.0:9150"`, `listen = "0.0.0.0:0"`, 1)
	if !strings.Contains(text, "port = 0") || !strings.Contains(text, `listen = "0.0.0.0:0"`) {
		t.Fatalf("the container config no longer has data_dir = \"/data\" and the ops listener on 0.0.0.0:9150; update this test's substitutions:\n%s", text)
	}
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// replaceArg returns args with every from replaced by to.
func replaceArg(args []string, from, to string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if a == from {
			out[i] = to
		}
	}
	return out
}

// statusPin reads the pin from the ops listener's /status.
func statusPin(t *testing.T, ops string) string {
	t.Helper()
	resp, err := http.Get("http://" + ops + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Pin string `json:"pin"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Pin
}

// TestDockerImageStarts runs the image's ENTRYPOINT and CMD with its
// config and the environment of docs/operations.md's `docker run`, and the
// docs' `docker run … check`; the server becomes ready, the HEALTHCHECK
// passes, and its pin is the one /status and `sparkhost identity` give.
func TestDockerImageStarts(t *testing.T) {
	bin := buildBinary(t)
	dockerfile := repoFile(t, "Dockerfile")
	entry := dockerfileArray(t, dockerfile, "ENTRYPOINT")
	cmd := dockerfileArray(t, dockerfile, "CMD")
	health := dockerfileArray(t, dockerfile, "HEALTHCHECK")
	imageConfig := dockerfileCopyTo(t, dockerfile, "deploy/docker/config.toml")
	if len(entry) != 1 || filepath.Base(entry[0]) != "sparkhost" || filepath.Base(health[0]) != "sparkhost" {
		t.Fatalf("ENTRYPOINT %q, HEALTHCHECK %q: expected the sparkhost binary", entry, health)
	}
	tmp := shortTempDir(t)
	cfgPath := containerConfig(t, tmp, string(repoFile(t, "deploy/docker/config.toml")))
	runs := docsDockerRuns(t)
	env, extra := dockerRunParts(t, runs[0])
	if len(extra) != 0 {
		t.Fatalf("the docs' first docker run adds arguments %q to the image's CMD", extra)
	}
	s := startOpsServer(t, bin, env, replaceArg(cmd, imageConfig, cfgPath)...)
	waitProbe(t, s.ops, "/readyz", http.StatusOK, "ready: ")
	if !strings.Contains(s.printed, "v3 refused") {
		t.Errorf("the container's game port is not v4 only:\n%s", s.printed)
	}
	_, port, _ := net.SplitHostPort(s.ops)
	hc := replaceArg(health[1:], "127.0.0.1:9150", "127.0.0.1:"+port)
	if code, out, errs := runBinary(t, bin, hc...); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Errorf("HEALTHCHECK %q: exit %d %q %q", hc, code, out, errs)
	}
	pin := statusPin(t, s.ops)
	if pin != s.pin {
		t.Errorf("/status pin %q, the server printed %q", pin, s.pin)
	}
	if code, out, _ := runBinary(t, bin, "identity", "--config", cfgPath); code != 0 || strings.TrimSpace(out) != s.pin {
		t.Errorf("sparkhost identity --config: exit %d %q, want %q", code, out, s.pin)
	}
	for _, run := range runs[1:] {
		env, args := dockerRunParts(t, run)
		args = replaceArg(replaceArg(args, imageConfig, cfgPath), "/data", filepath.Join(tmp, "data")) // the volume
		c := exec.Command(bin, args...)
		c.Env = append(os.Environ(), env...)
		out, err := c.Output()
		switch {
		case err != nil:
			t.Errorf("%q: %v\n%s", run, err, out)
		case args[0] == "check" && !strings.Contains(string(out), "check passed"):
			t.Errorf("%q:\n%s", run, out)
		case args[0] == "identity" && strings.TrimSpace(string(out)) != s.pin:
			t.Errorf("%q printed %q, the server's pin is %q", run, out, s.pin)
		}
	}
}

// manifestContainer is what a pod's sparkhost container runs.
type manifestContainer struct {
	Args []string `yaml:"args"`
	Env  []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom struct {
			FieldRef struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		SubPath   string `yaml:"subPath"`
	} `yaml:"volumeMounts"`
	LivenessProbe struct {
		HTTPGet struct{ Path string } `yaml:"httpGet"`
	} `yaml:"livenessProbe"`
	ReadinessProbe struct {
		HTTPGet struct{ Path string } `yaml:"httpGet"`
	} `yaml:"readinessProbe"`
}

// podSpec is a pod template's spec with its volumes.
type podSpec struct {
	Containers []manifestContainer `yaml:"containers"`
	Volumes    []struct {
		Name      string `yaml:"name"`
		ConfigMap struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
	} `yaml:"volumes"`
}

// manifest is one YAML document of deploy/agones.
type manifest struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Template struct {
			Spec podSpec `yaml:"spec"` // GameServer
		} `yaml:"template"`
	} `yaml:"spec"`
	Data map[string]string `yaml:"data"` // ConfigMap
}

// fleet is the Fleet document: a GameServer template inside.
type fleet struct {
	Spec struct {
		Template struct {
			Spec struct {
				Template struct {
					Spec podSpec `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// yamlDocs decodes every document of a YAML file into a new T each.
func yamlDocs[T any](t *testing.T, b []byte) []T {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []T
	for {
		var v T
		if err := dec.Decode(&v); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
}

// sidecar stands in for the Agones SDK sidecar on 127.0.0.1 and records
// its calls.
type sidecar struct {
	mu    sync.Mutex
	calls []string
	url   string
}

func newSidecarStandIn(t *testing.T) *sidecar {
	s := &sidecar{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.calls = append(s.calls, r.Method+" "+r.URL.Path+" "+strings.TrimSpace(string(body)))
		s.mu.Unlock()
		io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *sidecar) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// TestAgonesManifestsStart runs the container of deploy/agones's
// GameServer and Fleet with their args, env and ConfigMap; each becomes
// live and ready on its probes' paths, annotates its GameServer with its
// pin and tells Agones Ready.
func TestAgonesManifestsStart(t *testing.T) {
	bin := buildBinary(t)
	var configMap map[string]string
	var pods []podSpec
	for _, d := range yamlDocs[manifest](t, repoFile(t, "deploy/agones/gameserver.yaml")) {
		switch d.Kind {
		case "ConfigMap":
			configMap = d.Data
		case "GameServer":
			pods = append(pods, d.Spec.Template.Spec)
		}
	}
	for _, f := range yamlDocs[fleet](t, repoFile(t, "deploy/agones/fleet.yaml")) {
		pods = append(pods, f.Spec.Template.Spec.Template.Spec)
	}
	if len(pods) != 2 || configMap == nil {
		t.Fatalf("found %d pod templates and ConfigMap %v in deploy/agones", len(pods), configMap)
	}
	for i, pod := range pods {
		t.Run([]string{"gameserver", "fleet"}[i], func(t *testing.T) { startPod(t, bin, pod, configMap) })
	}
}

// startPod runs the pod's sparkhost container as a process.
func startPod(t *testing.T, bin string, pod podSpec, configMap map[string]string) {
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want sparkhost alone", len(pod.Containers))
	}
	c := pod.Containers[0]
	tmp := shortTempDir(t)
	args := slices.Clone(c.Args)
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Volumes, func(v struct {
			Name      string `yaml:"name"`
			ConfigMap struct {
				Name string `yaml:"name"`
			} `yaml:"configMap"`
		}) bool {
			return v.Name == m.Name
		})
		if i >= 0 && pod.Volumes[i].ConfigMap.Name != "" {
			text, ok := configMap[m.SubPath]
			if !ok {
				t.Fatalf("mount %s: the ConfigMap has no %s", m.MountPath, m.SubPath)
			}
			args = replaceArg(args, m.MountPath, containerConfig(t, tmp, text))
		}
	}
	sc := newSidecarStandIn(t)
	u, _ := url.Parse(sc.url)
	env := []string{"AGONES_SDK_HTTP_PORT=" + u.Port()}
	vars := map[string]string{}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom.FieldRef.FieldPath == "status.podIP" {
			v = "127.0.0.1" // the pod's IP, here loopback
		}
		for k, kv := range vars { // Kubernetes' $(VAR) expansion
			v = strings.ReplaceAll(v, "$("+k+")", kv)
		}
		vars[e.Name] = v
		env = append(env, e.Name+"="+v)
	}
	s := startOpsServer(t, bin, env, args...)
	waitProbe(t, s.ops, c.LivenessProbe.HTTPGet.Path, http.StatusOK, "ok: ")
	waitProbe(t, s.ops, c.ReadinessProbe.HTTPGet.Path, http.StatusOK, "ready: ")
	pinCall := `PUT /metadata/annotation {"key":"pin","value":"` + s.pin + `"}`
	var calls []string
	for range 100 {
		if calls = sc.snapshot(); slices.Contains(calls, "POST /ready {}") {
			break
		}
		waitProbe(t, s.ops, "/readyz", http.StatusOK, "ready: ") // a little time
	}
	ready := slices.Index(calls, "POST /ready {}")
	if ready < 0 || !slices.Contains(calls[:ready], pinCall) {
		t.Errorf("sidecar calls %q: want %s before POST /ready", calls, pinCall)
	}
	if pin := statusPin(t, s.ops); pin != s.pin {
		t.Errorf("/status pin %q, printed %q", pin, s.pin)
	}
	sc2 := bufio.NewScanner(strings.NewReader(s.printed))
	for sc2.Scan() {
		if strings.Contains(sc2.Text(), "v3 accepted") {
			t.Errorf("a pod's game port accepts v3: %s", sc2.Text())
		}
	}
}

// TestIdentityCommand: `sparkhost identity` creates the key the first
// time (saying so on stderr) and prints the pin alone, the same each time.
func TestIdentityCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var out, errb bytes.Buffer
	if code := identityMain([]string{"--data-dir", dir}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "created the server identity") {
		t.Fatalf("first run: exit %d %q %q", code, out.String(), errb.String())
	}
	pin := strings.TrimSpace(out.String())
	if !strings.HasPrefix(pin, "ed25519:") || strings.Contains(pin, "\n") {
		t.Fatalf("pin %q", pin)
	}
	out.Reset()
	errb.Reset()
	if code := identityMain([]string{"--data-dir", dir}, &out, &errb); code != 0 || strings.TrimSpace(out.String()) != pin || errb.Len() != 0 {
		t.Fatalf("second run: exit %d %q %q, want the same pin and nothing else", code, out.String(), errb.String())
	}
	if code := identityMain([]string{"extra"}, &out, &errb); code != 2 {
		t.Fatalf("an argument: exit %d", code)
	}
}
